"""Chunked scoring in the runner: one ``score`` call per chunk, results equal to item-by-item scoring."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.dataset_builder.schema import Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import data, prompts
from mmspubench.eval.backends.transformers import fast_scoring, scoring
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.config import RunConfig
from mmspubench.eval.protocol import ScoreRequest
from mmspubench.eval.records import SampleResult
from mmspubench.eval.runner import Clock, evaluate_item, evaluate_items

from tests.eval.fakes import FakeModel, make_dataset
from tests.eval.tiny_models import tiny_model_dir


def _config(**options: Any) -> RunConfig:
    return RunConfig(model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), **options)


def _items(n: int) -> list[Item]:
    return data.load_items(make_dataset(n), None, "hand-made")


def _in_chunks(model: Any, items: Sequence[Item], config: RunConfig, size: int) -> list[SampleResult]:
    out: list[SampleResult] = []
    for first in range(0, len(items), size):
        out += evaluate_items(model, items[first : first + size], config)
    return out


@pytest.mark.parametrize("answer_mode", ["generate", "logprob"])
def test_chunked_results_equal_item_by_item(answer_mode: str) -> None:
    items = _items(8)
    config = _config(answer_mode=answer_mode)
    one_by_one = [evaluate_item(FakeModel(), item, config) for item in items]
    for size in (3, 8):
        assert _in_chunks(FakeModel(), items, config, size) == one_by_one
    # The items differ, so equal lists are not an accident of equal scores.
    assert len({s.cgla_min for s in one_by_one}) > 1


def test_score_calls_per_chunk_in_logprob_mode() -> None:
    items = _items(5)
    fake = FakeModel()
    _in_chunks(fake, items, _config(answer_mode="logprob"), 3)
    sizes = [len(i.core_attributes) + len(i.spurious_attributes) for i in items]
    # Per chunk: one call for all option letters (4 per item), then one for all CGLA conditions.
    assert fake.score_calls == [12, sum(sizes[:3]), 8, sum(sizes[3:])]
    fake = FakeModel()
    _in_chunks(fake, items, _config(metrics=("cgla",)), 3)
    assert fake.score_calls == [sum(sizes[:3]), sum(sizes[3:])]


def test_cgla_clock_counts_the_score_calls_alone() -> None:
    clock = Clock()
    evaluate_items(FakeModel(delay=0.05), _items(4), _config(metrics=("cgla",)), clock)
    assert clock.accuracy_seconds == 0.0 and 0.05 <= clock.cgla_seconds < 1.0  # one call for the chunk


def test_non_finite_score_names_its_item() -> None:
    class NaNOnThird(FakeModel):
        def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
            scores = super().score(requests)
            third = [k for k, r in enumerate(requests) if r.image is items[2].image]
            scores[third[0]] = float("nan")
            return scores

    items = _items(4)
    with pytest.raises(MMSpuBenchError, match=f"item '{items[2].id}'.*non-finite CGL"):
        evaluate_items(NaNOnThird(), items, _config(metrics=("cgla",)))


class _PlainPerItem:
    """The plain scorer, called once per item: the reference for the chunked fast path."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def __getattr__(self, name: str) -> Any:
        return getattr(self.adapter, name)

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        return scoring.score_plain(self.adapter, requests)


def test_tiny_llava_fast_chunks_equal_plain_per_item(session_cache: Path) -> None:
    adapter = load_model(tiny_model_dir("llava", session_cache), batch_size=2, scorer="fast")
    assert fast_scoring.fallback_reason(adapter.model) is None  # the chunks really take the fast path
    items = _items(5)
    config = _config(answer_mode="logprob")
    chunked = _in_chunks(adapter, items, config, 3)
    plain = [evaluate_item(_PlainPerItem(adapter), item, config) for item in items]
    assert [s.id for s in chunked] == [s.id for s in plain]
    for fast, ref in zip(chunked, plain, strict=True):
        assert fast.option_scores is not None and ref.option_scores is not None
        assert fast.option_scores == pytest.approx(ref.option_scores, abs=1e-4)
        assert [c.cgl for c in fast.conditions] == pytest.approx([c.cgl for c in ref.conditions], abs=1e-4)
        assert [(c.attribute, c.kind, c.prompt) for c in fast.conditions] == [
            (c.attribute, c.kind, c.prompt) for c in ref.conditions
        ]
