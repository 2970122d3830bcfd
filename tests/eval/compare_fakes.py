"""Hand-made run folders (results.json + samples.jsonl) for compare and plot tests, no model needed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmspubench.eval import results
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import Condition, SampleResult

DATASET = {"kind": "built", "id": None, "path": "/data/x", "revision": None, "content_hash": "c0ffee"}


@dataclass(frozen=True)
class Item:
    """One item of a fake run: its types, whether it was answered right, its CGLA_min."""

    id: str
    types: tuple[str, ...]
    correct: bool
    cgla_min: float | None = None


def sample(item: Item) -> SampleResult:
    """A consistent sample record: prediction from ``correct``, conditions giving ``cgla_min``."""
    conditions: tuple[Condition, ...] = ()
    if item.cgla_min is not None:
        conditions = (
            Condition("core", "core", "p", " c", 0.0),
            Condition("spu", "spurious", "p", " c", -item.cgla_min),
        )
    return SampleResult(
        id=item.id,
        types=item.types,
        answer="A",
        prediction="A" if item.correct else "B",
        correct=item.correct,
        raw_output="A" if item.correct else "B",
        option_scores=None,
        class_name="c",
        conditions=conditions,
        cgla_min=item.cgla_min,
        cgla_acc=None if item.cgla_min is None else item.cgla_min > 0.0,
    )


def write_run(
    folder: Path,
    items: Sequence[Item],
    *,
    model: str = "model-a",
    answer_mode: str = "generate",
    dataset: dict[str, object] | None = None,
) -> Path:
    """Write a finished run folder the way eval does (figures recomputed from the samples)."""
    metrics = ("accuracy", "cgla") if all(i.cgla_min is not None for i in items) else ("accuracy",)
    config = RunConfig(model=model, dataset="/data/x", answer_mode=answer_mode, metrics=metrics)
    samples = [sample(i) for i in items]
    ids = [i.id for i in items]
    timing = {"load_seconds": 0.0, "accuracy_seconds": 0.0, "cgla_seconds": 0.0, "total_seconds": 0.0}
    obj = results.build_results(config, {"id": model}, dataset or DATASET, samples, ids, timing)
    folder.mkdir(parents=True)
    results.write_samples_atomic(folder / results.SAMPLES_NAME, samples)
    results.write_json_atomic(folder / results.RESULTS_NAME, obj)
    return folder
