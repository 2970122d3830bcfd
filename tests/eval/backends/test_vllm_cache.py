"""The prefix-cache schedule and checks of ``--backend vllm`` scoring, on a fake engine (no vLLM).

The fake engine keeps a cache of block-aligned prefixes of the prompts it ran before the current
call (like vLLM, a request does not read blocks computed in the same call) and fills the
log-probabilities of cached positions with garbage, as vLLM 0.32 leaves them uninitialised.
The engine itself: test_vllm_equality.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.vllm.cache import (
    CacheCounts,
    covers_scored,
    groups_of,
    score_reading_cache,
)
from mmspubench.eval.backends.vllm.engine import cache_key, check_text_only, continuation_sum

BLOCK = 4
GARBAGE = 123.0
TRUE = "the true count"


@dataclass
class _Out:
    prompt_token_ids: list[int]
    prompt_logprobs: list[Any]
    num_cached_tokens: Any


@dataclass
class _Engine:
    """Log-probability of token t at position p: -(t + p) / 100; cached positions: GARBAGE."""

    cache: set[tuple[int, ...]] = field(default_factory=set)
    calls: list[tuple[int, bool]] = field(default_factory=list)
    report: Any = TRUE
    """A fixed num_cached_tokens to report instead of the true one (a lying engine)."""

    def run(self, prompts: Sequence[list[int]], read: bool) -> list[_Out]:
        self.calls.append((len(prompts), read))
        outs = [self._one(p, read) for p in prompts]
        for p in prompts:  # blocks become readable after the call
            self.cache.update(tuple(p[:k]) for k in range(BLOCK, len(p) + 1, BLOCK))
        return outs

    def _one(self, ids: list[int], read: bool) -> _Out:
        cached = 0
        if read:
            cached = max(
                (k for k in range(BLOCK, len(ids), BLOCK) if tuple(ids[:k]) in self.cache), default=0
            )
        logprobs: list[Any] = [None] + [
            {t: (GARBAGE if p - 1 < cached else -(t + p) / 100)} for p, t in enumerate(ids) if p
        ]
        return _Out(ids, logprobs, cached if self.report == TRUE else self.report)


def _true(ids: list[int], n_scored: int) -> float:
    return sum(-(ids[p] + p) / 100 for p in range(len(ids) - n_scored, len(ids)))


def _score(
    engine: _Engine, prompts: list[list[int]], n_scored: list[int], counts: CacheCounts
) -> list[float]:
    keys = [p[0] for p in prompts]
    outs = score_reading_cache(engine.run, prompts, keys, n_scored, counts, budget=None, block=BLOCK)
    return [
        continuation_sum(p, len(p) - n, o.prompt_token_ids, o.prompt_logprobs, None)
        for p, n, o in zip(prompts, n_scored, outs, strict=True)
    ]


SHARED = [1, 2, 3, 4, 5, 6, 7, 8, 9]  # an image and shared prompt: two full blocks and a bit


def test_the_first_request_of_each_image_warms_the_cache_for_the_rest() -> None:
    prompts = [[g, *SHARED, a, 50, 51] for g in (100, 200) for a in (30, 31, 32)]
    engine, counts = _Engine(), CacheCounts()
    got = _score(engine, prompts, [2] * len(prompts), counts)
    assert got == pytest.approx([_true(p, 2) for p in prompts])
    # one group first (sizes the slices), then the other: warm wave, rest wave each
    assert engine.calls == [(1, True), (2, True), (1, True), (2, True)]
    assert counts.cached_tokens == 4 * 8 and counts.rescored == 0
    assert counts.computed_tokens == sum(map(len, prompts)) - 32
    assert counts.record()["rescored_share"] == 0.0


def test_identical_requests_are_rescored_without_the_cache() -> None:
    prompt = [7, *SHARED, 40, 41, 42, 43, 44, 45]  # 16 tokens, the last 6 scored
    engine, counts = _Engine(), CacheCounts()
    _score(engine, [prompt], [6], counts)
    got = _score(engine, [prompt, prompt], [6, 6], counts)  # now all of its blocks are cached
    assert got == pytest.approx([_true(prompt, 6)] * 2)  # not the garbage of cached positions
    assert engine.calls[-1] == (2, False)
    assert counts.rescored == 2 and counts.requests == 3


def test_a_prefix_of_another_request_is_rescored() -> None:
    short = [7, *SHARED, 40, 41, 42]
    long = [*short, 43, 44, 45, 46, 47]
    engine, counts = _Engine(), CacheCounts()
    _score(engine, [short], [3], counts)
    assert _score(engine, [long], [8], counts) == pytest.approx([_true(long, 8)])
    assert counts.rescored == 1


@pytest.mark.parametrize("report", [None, -1, "8", 2.0])
def test_an_unknown_cached_count_is_rescored_never_guessed(report: Any) -> None:
    prompt = [7, *SHARED, 40, 41]
    engine, counts = _Engine(report=report), CacheCounts()
    with pytest.raises(MMSpuBenchError, match="without the prefix cache read"):
        _score(engine, [prompt], [2], counts)  # the rescored pass reports no clean 0 either
    assert counts.rescored == 1


def test_covers_scored_boundary() -> None:
    # 10 prompt tokens, 3 scored: positions 7, 8, 9 need the logits of 6, 7, 8
    assert not covers_scored(6, 10, 3)
    assert covers_scored(7, 10, 3)
    assert covers_scored(None, 10, 3)


def test_groups_keep_first_appearance_order() -> None:
    assert groups_of(["b", "a", "b", "c", "a"]) == [[0, 2], [1, 4], [3]]


IMG = 3  # the image placeholder of the requests below (cache_key and check_text_only)


def test_cache_key_groups_rotations_by_image_and_text_only_requests_by_context() -> None:
    head = [1, 10, IMG, 11, 12]  # BOS, system, the image placeholder, the question
    rotations = [[*head, 20 + k, 21 + k, 30 + letter] for k in range(4) for letter in range(4)]
    image_keys = {cache_key("img-a", ids, len(ids) - 1, IMG) for ids in rotations}
    assert image_keys == {("img-a", (1, 10, IMG))}  # all 16 asks of one item: one group
    assert cache_key("img-b", rotations[0], 7, IMG) != cache_key(
        "img-a", rotations[0], 7, IMG
    )  # another image
    blind = [[1, 10, 11, 12, 20, 21, 30 + letter] for letter in range(4)]
    other = [[1, 10, 11, 12, 22, 21, 30 + letter] for letter in range(4)]  # another question
    blind_keys = {cache_key(None, ids, 6, IMG) for ids in blind}
    assert blind_keys == {(None, (1, 10, 11, 12, 20, 21))}  # the letters of one question, no image
    assert cache_key(None, other[0], 6, IMG) not in blind_keys
    assert groups_of([cache_key(None, ids, 6, IMG) for ids in blind + other]) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_a_text_only_prompt_with_an_image_placeholder_is_refused() -> None:
    check_text_only([1, 10, 11], IMG)
    check_text_only([1, IMG], None)  # a processor without an image token: nothing to check
    with pytest.raises(MMSpuBenchError, match="placeholder token 3 \\(at token 1\\)"):
        check_text_only([1, IMG, 11], IMG)


def test_rotations_and_blind_letters_read_the_shared_prefix_from_the_cache() -> None:
    """One item's four rotations (16 letter requests) and its blind question (4 text-only letter
    requests), keyed as the engine keys them: every request but each group's first reads the shared
    image + question blocks (rotations) or the context's (blind letters); scores are exact."""
    question = [1, *range(40, 47), IMG, *range(50, 58)]  # 16 tokens: 4 blocks shared by the rotations
    rotations = [[*question, 60 + k, 61, 62, 63, 64, 90 + letter] for k in range(4) for letter in range(4)]
    blind = [[1, *range(40, 47), *range(50, 58), 60, 61, 62, 63, 64, 90 + letter] for letter in range(4)]
    prompts = rotations + blind
    keys = [cache_key(None if i >= 16 else "img", p, len(p) - 1, IMG) for i, p in enumerate(prompts)]
    engine, counts = _Engine(), CacheCounts()
    reads: dict[int, int] = {}

    def run(batch: Sequence[list[int]], read: bool) -> list[_Out]:
        outs = engine.run(batch, read)
        for prompt, out in zip(batch, outs, strict=True):
            reads.setdefault(id(prompt), out.num_cached_tokens)
        return outs

    outs = score_reading_cache(run, prompts, keys, [1] * len(prompts), counts, budget=None, block=BLOCK)
    got = [
        continuation_sum(p, len(p) - 1, o.prompt_token_ids, o.prompt_logprobs, None)
        for p, o in zip(prompts, outs, strict=True)
    ]
    assert got == pytest.approx([_true(p, 1) for p in prompts])
    first = [reads[id(p)] for p in prompts]
    assert first[0] == 0  # the group's first request computes the image and the question
    assert first[16] == 8  # the blind one: only the tokens before the image are the same (1 block)
    assert all(n >= 16 for n in first[1:16])  # rotations 0-3 read the image and the question
    assert first[17:] == [20, 20, 20]  # the blind letters read the context's full blocks (of 21)
    assert counts.cached_tokens == sum(first) and counts.rescored == 0
