"""lmms-eval hooks of the ``mm_spubench`` and ``mm_spubench_circular`` tasks: thin calls into
mm-spubench's prompt, rotation, parser and metrics.

``mm_spubench_circular`` asks every item in its four cyclic rotations (``circular_docs``: each doc
four times, rotation ``k`` in the field :data:`ROTATION_KEY`; ``mmspubench eval``'s own rotation,
``eval.views.confounds.metrics``): the prompt shows the rotated options, the target is the gold letter
as shown, and the aggregations are ``mmspubench eval``'s circular figures (``circular_summary``).

``mm_spubench_<name>`` (one task per built-in intervention of ``eval.interventions``: grayscale,
blur, equalize, noise; tag ``mm_spubench_interventions``) is ``mm_spubench`` with the image changed
in ``doc_to_visual`` by ``eval.interventions.apply`` (the pixels ``mmspubench eval --interventions
<name>`` shows); its records add the intervention's name (:data:`INTERVENTION_KEY`) and the digest
of the pixels shown (:data:`DIGEST_KEY`).

lmms-eval imports this file from the task folder; mm-spubench must be importable in its
environment (``pip install --no-deps mm-spubench`` beside lmms-eval is enough: only the dataset
schema, prompts, parser, metrics and the numpy/Pillow image transforms are used).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV, Item
from mmspubench.eval import interventions, metrics, prompts
from mmspubench.eval.replies.parse import parse_answer
from mmspubench.eval.views.confounds import metrics as metrics_confounds

METRIC = "mm_spubench_acc"
"""The overall metric; its per-item record is what ``mmspubench ingest lmms-eval`` reads."""
CIRCULAR_METRIC = "mm_spubench_circular_acc"
"""The circular task's overall metric; its per-rotation record is what ingest reads."""
ROTATION_KEY = "mmspubench_rotation"
"""The doc field of the circular task holding the rotation ``k`` (0-3) of the options shown."""
CIRCULAR_KEYS = (
    CIRCULAR_METRIC,
    "mm_spubench_circular_average",
    "mm_spubench_vanilla_acc",
    "mm_spubench_rotation_acc",
    "mm_spubench_consistency",
)
"""The circular task's metrics (each carries the same per-rotation record)."""
INTERVENTION_KEY = "intervention"
"""The record field of an intervention task naming its intervention (``grayscale``...)."""
DIGEST_KEY = "digest"
"""The record field of an intervention task: ``pixel_digest`` of the image shown (as in samples.jsonl)."""


def _item(doc: dict[str, Any]) -> Item:
    return Item.from_row(doc, "lmms-eval doc")


def _rotation(doc: dict[str, Any]) -> int:
    return int(doc.get(ROTATION_KEY, 0))


def _shown(doc: dict[str, Any]) -> tuple[Item, tuple[str, ...], str]:
    """The item, its options as shown and the gold letter as shown (the doc's rotation)."""
    item, k = _item(doc), _rotation(doc)
    return (
        item,
        metrics_confounds.rotated_options(item.options, k),
        metrics_confounds.rotated_answer(item.answer, k),
    )


def circular_docs(dataset: Any) -> Any:
    """Each doc four times, rotations 0-3 of one item next to each other (so ``--limit`` cuts between
    items only at multiples of 4); the rotation in :data:`ROTATION_KEY`."""
    import datasets

    n = len(dataset)
    copies = [dataset.add_column(ROTATION_KEY, [k] * n) for k in metrics_confounds.ROTATIONS]
    whole = datasets.concatenate_datasets(copies)
    return whole.select([k * n + i for i in range(n) for k in metrics_confounds.ROTATIONS])


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The item's image, RGB, as ``mmspubench eval`` gives it to the model."""
    return [_item(doc).pil_image]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The multiple-choice user text of ``mmspubench eval --answer-mode generate`` (options as shown)."""
    item, options, _ = _shown(doc)
    return prompts.mcq_prompt(item.question, options, "generate").user_text


def doc_to_target(doc: dict[str, Any]) -> str:
    """The correct letter as shown."""
    return _shown(doc)[2]


def _harness_version() -> str:
    try:
        return version("lmms_eval")
    except PackageNotFoundError:
        return "unknown"


def _record(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    item, options, gold = _shown(doc)
    raw = results[0] if results else ""
    prediction = parse_answer(raw, options)
    record = {
        "id": item.id,
        "types": list(item.spurious_types),
        "answer": gold,
        "prediction": prediction,
        "correct": prediction == gold,
        "raw_output": raw,
        "user_text": prompts.mcq_prompt(item.question, options, "generate").user_text,
        "harness_version": _harness_version(),
    }
    if ROTATION_KEY in doc:
        record["rotation"] = _rotation(doc)
    return record


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """One item's record, read by our parser, under every metric of the task."""
    return _under_every_metric(_record(doc, results))


def _under_every_metric(record: dict[str, Any]) -> dict[str, Any]:
    keys = [METRIC, "mm_spubench_average", *(f"mm_spubench_{t.name}" for t in SPURIOUS_TYPES)]
    return {key: record for key in keys}


def _visual(name: str) -> Any:
    def doc_to_visual_intervened(doc: dict[str, Any]) -> list[Any]:
        return [interventions.apply(name, _item(doc).pil_image)[0]]

    doc_to_visual_intervened.__name__ = f"doc_to_visual_{name}"
    doc_to_visual_intervened.__doc__ = f"The item's image under the {name} intervention (RGB, same size)."
    return doc_to_visual_intervened


def _process(name: str) -> Any:
    def process_results_intervened(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
        # The digest is recomputed from the doc (the transform is cached by the source's pixels), so
        # the record says which pixels the task's doc_to_visual gave, as samples.jsonl does.
        record = _record(doc, results)
        record[INTERVENTION_KEY] = name
        record[DIGEST_KEY] = interventions.apply(name, _item(doc).pil_image)[1]
        return _under_every_metric(record)

    process_results_intervened.__name__ = f"process_results_{name}"
    process_results_intervened.__doc__ = (
        f"``process_results`` with the {name} intervention's name and digest."
    )
    return process_results_intervened


doc_to_visual_grayscale = _visual("grayscale")
doc_to_visual_blur = _visual("blur")
doc_to_visual_equalize = _visual("equalize")
doc_to_visual_noise = _visual("noise")
process_results_grayscale = _process("grayscale")
process_results_blur = _process("blur")
process_results_equalize = _process("equalize")
process_results_noise = _process("noise")


def process_results_circular(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """One rotation's record (with its ``rotation``) under every metric of the circular task."""
    record = _record(doc, results)
    return {key: record for key in CIRCULAR_KEYS}


def circular(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``eval.views.confounds.metrics.circular_summary`` of the items whose four rotations are all there."""
    groups: dict[str, dict[int, dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["id"], {})[int(r["rotation"])] = r
    types, rotations = [], []
    for group in groups.values():
        if sorted(group) != list(metrics_confounds.ROTATIONS):
            continue
        types.append(tuple(group[0]["types"]))
        rotations.append(
            [
                metrics_confounds.RotationAnswer(k, group[k]["answer"], group[k]["prediction"])
                for k in sorted(group)
            ]
        )
    return metrics_confounds.circular_summary(types, rotations, 0)


def aggregate_circular(records: list[dict[str, Any]]) -> float:
    """% of items right in all four rotations."""
    return float(circular(records)["accuracy"])


def aggregate_circular_average(records: list[dict[str, Any]]) -> float:
    """The mean over types of the circular accuracy."""
    return float(circular(records)["average"])


def aggregate_vanilla(records: list[dict[str, Any]]) -> float:
    """% right in rotation 0 (the published order)."""
    return float(circular(records)["vanilla_accuracy"])


def aggregate_rotation(records: list[dict[str, Any]]) -> float:
    """% right over every rotation answer."""
    return float(circular(records)["rotation_accuracy"])


def aggregate_consistency(records: list[dict[str, Any]]) -> float:
    """% of items where the same option text is chosen in all four rotations."""
    return float(circular(records)["consistency"])


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
