"""``--backend openai`` against a vLLM server: scoring requests that read its prefix cache.

The request option is vLLM's sampling parameter ``skip_reading_prefix_cache: false`` in the
request body, and what the server read is the chat completion's
``usage.prompt_tokens_details.cached_tokens`` (a vLLM server reports it when started with
``--enable-prompt-tokens-details``). The option is sent only where :func:`reads_cache` found both
at start: the server honours it (a second identical long prompt reports cached tokens) and says
how many tokens it read. vLLM 0.32's server takes no such field (it ignores it with a warning, and
recomputes every prompt that asks for prompt log-probabilities), so against it nothing changes and
results.json records ``prefix_cache.read: false``.

Where the option is sent, each answer's cached count is checked as the offline engine's
(:func:`~mmspubench.eval.backends.vllm.cache.covers_scored`): a request whose cache read covered a
position the continuation needs, or that did not say how much it read, is sent again with
``skip_reading_prefix_cache: true``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from mmspubench.eval.backends.vllm.cache import CacheCounts, covers_scored, groups_of
from mmspubench.eval.protocol import FastPath

SERVER_CACHE = FastPath(
    name="the server's prefix-cache scoring",
    remedy="a server started without prefix caching (vLLM: --no-enable-prefix-caching)",
)
"""Scoring requests that read the server's prefix cache, as a fast path (:mod:`mmspubench.eval.scorer_check`)."""

READ_CACHE = {"skip_reading_prefix_cache": False}
"""The request option that reads the prefix cache."""

SKIP_CACHE = {"skip_reading_prefix_cache": True}
"""The request option of a rescored request."""

PROBE_TEXT = " ".join(["the striped cat sits on the wooden table next to a metal lamp"] * 40)
"""A text prompt of several hundred tokens: longer than any KV block, so a second copy reads some."""


def cached_tokens(response: Any) -> int | None:
    """``usage.prompt_tokens_details.cached_tokens`` of a chat completion when it is a count."""
    details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
    value = (
        details.get("cached_tokens") if isinstance(details, dict) else getattr(details, "cached_tokens", None)
    )
    return value if type(value) is int and value >= 0 else None


async def reads_cache(client: Any, name: str, extra: dict[str, Any]) -> bool:
    """Whether the server honours ``skip_reading_prefix_cache: false`` with prompt log-probabilities
    and reports the tokens it read: the same long prompt twice, the second must report some."""
    messages = [{"role": "user", "content": PROBE_TEXT}, {"role": "assistant", "content": "probe"}]
    body = {**extra, "prompt_logprobs": 0, **READ_CACHE}
    found = None
    for _ in range(2):
        response = await client.chat.completions.create(
            model=name, messages=messages, max_tokens=1, temperature=0.0, extra_body=body
        )
        found = cached_tokens(response)
    return found is not None and found > 0


def in_waves(keys: Sequence[Hashable], run: Callable[[list[int]], list[float]]) -> list[float]:
    """Scores in input order, the first request of each key (image) run before the others."""
    scores = [0.0] * len(keys)
    groups = groups_of(keys)
    for wave in ([g[0] for g in groups], [i for g in groups for i in g[1:]]):
        if wave:
            for index, score in zip(wave, run(wave), strict=True):
                scores[index] = score
    return scores


Ask = Callable[[bool], Awaitable[tuple[list[int], list[Any], int | None]]]
"""``ask(read_cache)``: (prompt token ids, prompt log-probabilities, cached tokens) of one request."""


async def checked(ask: Ask, read: bool, n_scored: int, counts: CacheCounts) -> tuple[list[int], list[Any]]:
    """One request's prompt log-probabilities, read from the cache when ``read``; an answer whose
    cache read covered a scored position, or that did not say how much it read, is asked again
    without the cache. Its tokens are added to ``counts``."""
    ids, logprobs, cached = await ask(read)
    counts.requests += 1
    used = (cached or 0) if read else 0
    counts.cached_tokens += used
    counts.computed_tokens += len(ids) - used
    if read and covers_scored(cached, len(ids), n_scored):
        counts.rescored += 1
        ids, logprobs, _ = await ask(False)
        counts.computed_tokens += len(ids)
    return ids, logprobs
