"""lmms-eval hooks of the ``mm_spubench`` task: thin calls into mm-spubench's prompt, parser and metrics.

lmms-eval imports this file from the task folder; mm-spubench must be importable in its
environment (``pip install --no-deps mm-spubench`` beside lmms-eval is enough: only the dataset
schema, prompts, parser and metrics are used).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV, Item
from mmspubench.eval import metrics, prompts
from mmspubench.eval.parse import parse_answer

METRIC = "mm_spubench_acc"
"""The overall metric; its per-item record is what ``mmspubench ingest lmms-eval`` reads."""


def _item(doc: dict[str, Any]) -> Item:
    return Item.from_row(doc, "lmms-eval doc")


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The item's image, RGB, as ``mmspubench eval`` gives it to the model."""
    return [_item(doc).pil_image]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The multiple-choice user text of ``mmspubench eval --answer-mode generate``."""
    item = _item(doc)
    return prompts.mcq_prompt(item.question, item.options, "generate").user_text


def doc_to_target(doc: dict[str, Any]) -> str:
    """The correct letter."""
    return _item(doc).answer


def _harness_version() -> str:
    try:
        return version("lmms_eval")
    except PackageNotFoundError:
        return "unknown"


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """One item's record, read by our parser, under every metric of the task."""
    item = _item(doc)
    raw = results[0] if results else ""
    prediction = parse_answer(raw, item.options)
    record = {
        "id": item.id,
        "types": list(item.spurious_types),
        "answer": item.answer,
        "prediction": prediction,
        "correct": prediction == item.answer,
        "raw_output": raw,
        "user_text": prompts.mcq_prompt(item.question, item.options, "generate").user_text,
        "harness_version": _harness_version(),
    }
    keys = [METRIC, "mm_spubench_average", *(f"mm_spubench_{t.name}" for t in SPURIOUS_TYPES)]
    return {key: record for key in keys}


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``mmspubench.eval.metrics.accuracy_summary`` of the records (percentages, Table 2)."""
    scored = [metrics.Scored(tuple(r["types"]), 1.0 if r["correct"] else 0.0) for r in records]
    return metrics.accuracy_summary(scored, sum(r["prediction"] is None for r in records), 0)


def aggregate_overall(records: list[dict[str, Any]]) -> float:
    """Overall accuracy in percent."""
    return float(summary(records)["overall"])


def aggregate_average(records: list[dict[str, Any]]) -> float:
    """Table 2's Average: the mean of the per-type accuracies of types with items."""
    return float(summary(records)["average"])


def _by_type(name: str) -> Any:
    def aggregate(records: list[dict[str, Any]]) -> float | None:
        value = summary(records)["by_type"][TYPE_ABBREV[name]]
        return None if value is None else float(value)

    aggregate.__name__ = f"aggregate_{name}"
    aggregate.__doc__ = f"Accuracy in percent on the items of type {name} (``None`` without any)."
    return aggregate


aggregate_background = _by_type("background")
aggregate_texture_noise = _by_type("texture_noise")
aggregate_co_occurring_objects = _by_type("co_occurring_objects")
aggregate_relative_size = _by_type("relative_size")
aggregate_colorization = _by_type("colorization")
aggregate_orientation = _by_type("orientation")
aggregate_lighting_shadows = _by_type("lighting_shadows")
aggregate_perspective_angle = _by_type("perspective_angle")
aggregate_shape = _by_type("shape")
