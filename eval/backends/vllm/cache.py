"""Scoring requests that read vLLM's prefix cache, checked request by request.

vLLM skips its prefix cache for any request that asks for prompt log-probabilities unless the
request says otherwise (``SamplingParams.skip_reading_prefix_cache=False``). Positions read from
the cache get no log-probabilities (vLLM 0.32 leaves their rows of the prompt log-probability
tensor uninitialised, so their values are not even ``None``); the ones after them are computed.
A CGL needs the logits of the last context token and of every continuation token but the last,
so a request is usable exactly when ``RequestOutput.num_cached_tokens`` stops before the last
context token (:func:`covers_scored`). Every request is checked; one whose cache read went past
that point (two identical conditions, a condition that is a prefix of another, a block boundary
that falls inside the continuation) is scored again without reading the cache, never guessed.

Schedule: the requests of one image (an item's conditions, or its four option letters) form a
group. A slice of groups runs in two waves: first one request per group (it computes the image
and the shared prompt and leaves their KV blocks in the cache), then the rest of each group (they
read those blocks and compute only their own suffix). Slices are sized to the KV cache so that a
group's blocks are still there when its second wave runs; a slice that is too large costs only
speed (the checked counts show it), never correctness.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from mmspubench.errors import MMSpuBenchError

Run = Callable[[Sequence[Any], bool], list[Any]]
"""``run(prompts, read_cache)``: one engine call, outputs in input order."""


@dataclass(slots=True)
class CacheCounts:
    """Prompt tokens of the scoring requests, summed over this process (mutable running totals)."""

    requests: int = 0
    """Scoring requests answered (a rescored request counts once)."""
    computed_tokens: int = 0
    """Prompt tokens the engine computed (a rescored request's both passes)."""
    cached_tokens: int = 0
    """Prompt tokens read from the prefix cache (by first passes that were kept or rescored)."""
    rescored: int = 0
    """Requests scored again without the cache because the cache covered a position they need."""

    def record(self) -> dict[str, Any]:
        """results.json's ``backend.prefix_cache``."""
        share = self.rescored / self.requests if self.requests else 0.0
        return {
            "requests": self.requests,
            "computed_prompt_tokens": self.computed_tokens,
            "cached_prompt_tokens": self.cached_tokens,
            "rescored_requests": self.rescored,
            "rescored_share": share,
        }


def num_cached(output: Any) -> int | None:
    """``output.num_cached_tokens`` when it is a count (an int >= 0), else ``None`` (unknown)."""
    value = getattr(output, "num_cached_tokens", None)
    return value if type(value) is int and value >= 0 else None


def covers_scored(cached: int | None, n_prompt: int, n_scored: int) -> bool:
    """Whether ``cached`` tokens read from the cache include a position whose logits the last
    ``n_scored`` of ``n_prompt`` tokens need (the first of them is position ``n_prompt - n_scored -
    1``, the last context token). An unknown count covers everything."""
    return cached is None or cached > n_prompt - n_scored - 1


def groups_of(keys: Sequence[Hashable]) -> list[list[int]]:
    """Indexes of equal keys, groups in order of first appearance, indexes in input order."""
    found: dict[Hashable, list[int]] = {}
    for index, key in enumerate(keys):
        found.setdefault(key, []).append(index)
    return list(found.values())


def slice_size(n_prompt: int, group: int, budget: int | None, block: int) -> int:
    """Groups per slice: their first requests' prompts plus their other requests' suffixes (at most
    two blocks each, the partial block at the shared prefix's end and the suffix) fit in ``budget``
    tokens (``None``: no limit known, one slice)."""
    if budget is None:
        return 1 << 30
    cost = n_prompt + max(0, group - 1) * min(n_prompt, 2 * block)
    return max(1, budget // max(1, cost))


def score_reading_cache(
    run: Run,
    prompts: Sequence[Any],
    keys: Sequence[Hashable],
    n_scored: Sequence[int],
    counts: CacheCounts,
    budget: int | None = None,
    block: int = 16,
) -> list[Any]:
    """Outputs of ``prompts`` (input order), each usable for its last ``n_scored`` tokens.

    ``keys`` group the requests that share an image and prompt prefix; ``budget`` is the KV
    cache's size in tokens and ``block`` its block size (slice sizes)."""
    outputs: list[Any] = [None] * len(prompts)
    groups = groups_of(keys)
    first, size = 0, 1  # one group first: its prompt length sizes the next slices
    while first < len(groups):
        part = groups[first : first + size]
        warm = [g[0] for g in part]
        rest = [i for g in part for i in g[1:]]
        for wave in (warm, rest):
            if wave:
                for index, out in zip(wave, run([prompts[i] for i in wave], True), strict=True):
                    outputs[index] = out
        n_prompt = max(len(outputs[i].prompt_token_ids) for i in warm)
        size = slice_size(n_prompt, max(len(g) for g in part), budget, block)
        first += len(part)
    _rescore(run, prompts, n_scored, outputs, counts)
    return outputs


def _rescore(
    run: Run, prompts: Sequence[Any], n_scored: Sequence[int], outputs: list[Any], counts: CacheCounts
) -> None:
    """Count every output's tokens; score again without the cache those whose read covered a
    needed position, and refuse a second pass that still read from the cache."""
    again = []
    for index, out in enumerate(outputs):
        cached, n_prompt = num_cached(out), len(out.prompt_token_ids)
        counts.requests += 1
        counts.cached_tokens += cached or 0
        counts.computed_tokens += n_prompt - (cached or 0)
        if covers_scored(cached, n_prompt, n_scored[index]):
            again.append(index)
    if not again:
        return
    counts.rescored += len(again)
    for index, out in zip(again, run([prompts[i] for i in again], False), strict=True):
        cached = num_cached(out)
        if cached != 0:
            raise MMSpuBenchError(
                f"--backend vllm: a request scored without the prefix cache read {cached} cached tokens; "
                "its log-probabilities cannot be trusted"
            )
        counts.computed_tokens += len(out.prompt_token_ids)
        outputs[index] = out
