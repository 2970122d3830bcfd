"""Hand-made run folders (results.json + samples.jsonl) for compare and plot tests, no model needed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmspubench.eval.config import RunConfig
from mmspubench.eval.interventions import INTERVENTIONS
from mmspubench.eval.records import Answer, Condition, InterventionAnswer, Rotation, SampleResult
from mmspubench.eval.views.confounds import calibration as metrics_calibration
from mmspubench.eval.views.confounds import metrics as metrics_confounds

from tests.helpers.run_folders import write_run_folder

DATASET = {"kind": "built", "id": None, "path": "/data/x", "revision": None, "content_hash": "c0ffee"}


@dataclass(frozen=True)
class Asked:
    """The item asked under one intervention: whether it was right, its CGLA_min and letter scores."""

    name: str
    correct: bool
    cgla_min: float | None = None
    """CGLA_min under the changed image (given when the item has one)."""
    scores: tuple[float, ...] | None = None
    """Letter scores A-D (gold is A) under the changed image (given when the item has scores)."""


CF_TARGETS = ("background",)
"""The targets a fake counterfactual records (a built-in records its registry's)."""


@dataclass(frozen=True)
class Item:
    """One item of a fake run: its types, whether it was answered right, its CGLA_min."""

    id: str
    types: tuple[str, ...]
    correct: bool
    cgla_min: float | None = None
    rotations: tuple[bool, ...] | None = None
    """Whether rotations 1, 2, 3 are right (rotation 0 is ``correct``); ``None``: no circular view."""
    blind: bool | None = None
    """Whether the blind answer is right; ``None``: no blind view."""
    scores: tuple[float, ...] | None = None
    """Letter scores A-D (gold is A): a logprob run with calibration; the prediction is their argmax."""
    interventions: tuple[Asked, ...] | None = None
    """The item under each intervention of the run (in order); ``None``: no interventions view."""


def _reply(right: bool, gold: str) -> Answer:
    wrong = "B" if gold != "B" else "C"
    return Answer(gold if right else wrong, right, None, None)


def _rotations(item: Item) -> tuple[Rotation, ...] | None:
    if item.rotations is None:
        return None
    rights = (item.correct, *item.rotations)
    golds = [metrics_confounds.rotated_answer("A", k) for k in range(len(rights))]
    return tuple(
        Rotation(k, metrics_confounds.rotation_order(k), golds[k], _reply(right, golds[k]))
        for k, right in enumerate(rights)
    )


def _asked(item: Item, asked: Asked) -> InterventionAnswer:
    builtin = INTERVENTIONS.get(asked.name)
    if (asked.scores is None) != (item.scores is None) or (asked.cgla_min is None) != (item.cgla_min is None):
        raise ValueError(f"{item.id}: {asked.name} needs scores and CGLA_min exactly when the item has them")
    if asked.scores is not None and (asked.scores.index(max(asked.scores)) == 0) != asked.correct:
        raise ValueError(f"{item.id}: {asked.name}: the scores' argmax disagrees with correct")
    reply = _reply(asked.correct, "A")
    if asked.scores is not None:
        reply = Answer(reply.prediction, reply.correct, None, asked.scores)
    else:
        reply = Answer(reply.prediction, reply.correct, reply.prediction, None)
    cgla_min = asked.cgla_min
    return InterventionAnswer(
        name=asked.name,
        targets=CF_TARGETS if builtin is None else builtin.targets,
        digest="0" * 64,
        reply=reply,
        cgls=None if cgla_min is None else (0.0, -cgla_min),
        cgla_min=cgla_min,
        cgla_acc=None if cgla_min is None else cgla_min > 0.0,
    )


def sample(item: Item) -> SampleResult:
    """A consistent sample record: prediction from ``correct``, conditions giving ``cgla_min``."""
    conditions: tuple[Condition, ...] = ()
    if item.cgla_min is not None:
        conditions = (
            Condition("core", "core", "p", " c", 0.0),
            Condition("spu", "spurious", "p", " c", -item.cgla_min),
        )
    probs = None if item.scores is None else metrics_calibration.option_probs(item.scores)
    if probs is not None and (probs.index(max(probs)) == 0) != item.correct:
        raise ValueError(f"{item.id}: the scores' argmax disagrees with correct={item.correct}")
    return SampleResult(
        id=item.id,
        types=item.types,
        answer="A",
        prediction="A" if item.correct else "B",
        correct=item.correct,
        raw_output=None if item.scores is not None else "A" if item.correct else "B",
        option_scores=item.scores,
        class_name="c",
        conditions=conditions,
        cgla_min=item.cgla_min,
        cgla_acc=None if item.cgla_min is None else item.cgla_min > 0.0,
        rotations=_rotations(item),
        blind=None if item.blind is None else _reply(item.blind, "A"),
        option_probs=probs,
        interventions=None
        if item.interventions is None
        else tuple(_asked(item, a) for a in item.interventions),
    )


def _metrics(items: Sequence[Item]) -> tuple[str, ...]:
    out = ["accuracy"]
    for name, given in (
        ("cgla", [i.cgla_min for i in items]),
        ("circular", [i.rotations for i in items]),
        ("blind", [i.blind for i in items]),
        ("calibration", [i.scores for i in items]),
    ):
        if all(v is not None for v in given):
            out.append(name)
    return tuple(out)


def write_run(
    folder: Path,
    items: Sequence[Item],
    *,
    model: str = "model-a",
    answer_mode: str = "generate",
    dataset: dict[str, object] | None = None,
    interventions: tuple[str, ...] | None = None,
) -> Path:
    """Write a finished run folder the way eval does (figures recomputed from the samples);
    ``interventions``: the run's names (default: those of the first item, e.g. ``("cf:*",)``)."""
    metrics = _metrics(items)
    if "calibration" in metrics:
        answer_mode = "logprob"
    names: tuple[str, ...] = ()
    if items and items[0].interventions is not None:
        metrics = (*metrics, "interventions")
        names = interventions or tuple(a.name for a in items[0].interventions)
        answer_mode = "logprob" if items[0].scores is not None else answer_mode
    config = RunConfig(
        model=model, dataset="/data/x", answer_mode=answer_mode, metrics=metrics, interventions=names
    )
    samples = [sample(i) for i in items]
    timing = {"load_seconds": 0.0, "accuracy_seconds": 0.0, "cgla_seconds": 0.0, "total_seconds": 0.0}
    info = dataset or DATASET
    return write_run_folder(folder, config, samples, info, {"id": model}, timing=timing, stamp=False)
