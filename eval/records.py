"""The records of an evaluation: a scored condition and a per-item result (the item is ``schema.Item``).

All are frozen; a per-item result is built once, when the item has been fully scored, and written to
``samples.jsonl`` as one JSON line (``SampleResult.to_json`` / ``SampleResult.from_json``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

ConditionKind = Literal["core", "spurious"]


@dataclass(frozen=True, slots=True)
class Condition:
    """One attribute condition of CGLA with its exact prompt and its score."""

    attribute: str
    """Attribute text t put into g(t)."""
    kind: ConditionKind
    """``core`` or ``spurious``."""
    prompt: str
    """Exact text given to the processor with the item's image (chat template applied)."""
    continuation: str
    """Exact text whose tokens were scored (the class name with its leading space)."""
    cgl: float
    """CGL: sum of log-probabilities of the continuation tokens, in nats."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of this condition."""
        return {
            "attribute": self.attribute,
            "kind": self.kind,
            "prompt": self.prompt,
            "continuation": self.continuation,
            "cgl": self.cgl,
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Condition:
        """Inverse of ``to_json``."""
        kind = obj["kind"]
        if kind not in ("core", "spurious"):
            raise ValueError(f"condition kind must be 'core' or 'spurious', got {kind!r}")
        return Condition(
            attribute=str(obj["attribute"]),
            kind=kind,
            prompt=str(obj["prompt"]),
            continuation=str(obj["continuation"]),
            cgl=_finite(obj["cgl"], "cgl"),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """One multiple-choice answer of a confound view (the blind one, or one rotation's)."""

    prediction: str | None
    """Chosen letter as shown; ``None`` when unparsed."""
    correct: bool
    """Whether ``prediction`` is the gold letter as shown (unparsed is wrong)."""
    raw_output: str | None
    """Generated text (``generate`` mode), else ``None``."""
    option_scores: tuple[float, ...] | None
    """Letter scores A-D as shown (``logprob`` mode), else ``None``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "prediction": self.prediction,
            "correct": self.correct,
            "raw_output": self.raw_output,
            "option_scores": None if self.option_scores is None else list(self.option_scores),
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Answer:
        """Inverse of ``to_json``."""
        scores = obj["option_scores"]
        correct = _opt_bool(obj["correct"], "correct")
        if correct is None:
            raise TypeError("field 'correct' must be true or false")
        return Answer(
            prediction=_opt_str(obj["prediction"]),
            correct=correct,
            raw_output=_opt_str(obj["raw_output"]),
            option_scores=None if scores is None else tuple(float(s) for s in scores),
        )


@dataclass(frozen=True, slots=True)
class Rotation:
    """One cyclic rotation of an item's options and the answer given to it."""

    rotation: int
    """``k``: the option of published position ``j`` is shown at ``(j + k) mod 4``."""
    order: tuple[int, ...]
    """Published option index shown at A, B, C, D."""
    answer: str
    """Gold letter as shown in this rotation."""
    reply: Answer
    """The model's answer to this rotation."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: ``rotation``, ``order``, ``answer`` and the answer's fields."""
        return {
            "rotation": self.rotation,
            "order": list(self.order),
            "answer": self.answer,
            **self.reply.to_json(),
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Rotation:
        """Inverse of ``to_json``."""
        return Rotation(
            rotation=int(obj["rotation"]),
            order=tuple(int(j) for j in obj["order"]),
            answer=str(obj["answer"]),
            reply=Answer.from_json(obj),
        )


@dataclass(frozen=True, slots=True)
class SampleResult:
    """Everything recorded about one item: one line of ``samples.jsonl``."""

    id: str
    """Item id."""
    types: tuple[str, ...]
    """Canonical spurious-type names of the item."""
    answer: str
    """Correct option letter."""
    prediction: str | None
    """Chosen option letter; ``None`` when the answer could not be parsed or accuracy was not run."""
    correct: bool | None
    """Whether ``prediction == answer``; ``None`` when accuracy was not run (unparsed counts as False)."""
    raw_output: str | None
    """Generated text in ``generate`` mode; ``None`` in ``logprob`` mode or without accuracy."""
    option_scores: tuple[float, ...] | None
    """Log-probabilities of the option letters in ``logprob`` mode, else ``None``."""
    class_name: str
    """Ground-truth class name (the CGL continuation without its leading space)."""
    conditions: tuple[Condition, ...]
    """Core then spurious conditions, in dataset order; empty when CGLA was not run."""
    cgla_min: float | None
    """CGLA_min under the run's core reduction; ``None`` when CGLA was not run."""
    cgla_acc: bool | None
    """``cgla_min > 0``; ``None`` when CGLA was not run."""
    rotations: tuple[Rotation, ...] | None = None
    """The four cyclic rotations of the options, rotation 0 first (``circular``); else ``None``."""
    blind: Answer | None = None
    """The answer without the image (``blind``); else ``None``."""
    option_probs: tuple[float, ...] | None = None
    """Softmax of ``option_scores`` (``calibration``); else ``None``."""

    @property
    def unparsed(self) -> bool:
        """Accuracy was run but no option could be read from the answer."""
        return self.correct is not None and self.prediction is None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict with the field names of docs/DESIGN.md ("Result files")."""
        return {
            "id": self.id,
            "types": list(self.types),
            "answer": self.answer,
            "prediction": self.prediction,
            "correct": self.correct,
            "raw_output": self.raw_output,
            "option_scores": None if self.option_scores is None else list(self.option_scores),
            "class_name": self.class_name,
            "conditions": [c.to_json() for c in self.conditions],
            "cgla_min": self.cgla_min,
            "cgla_acc": self.cgla_acc,
            **_optional(self),
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> SampleResult:
        """Inverse of ``to_json``; raises ``KeyError``/``ValueError``/``TypeError`` on a malformed line."""
        scores = obj["option_scores"]
        cgla_min = obj["cgla_min"]
        return SampleResult(
            id=str(obj["id"]),
            types=tuple(str(t) for t in obj["types"]),
            answer=str(obj["answer"]),
            prediction=_opt_str(obj["prediction"]),
            correct=_opt_bool(obj["correct"], "correct"),
            raw_output=_opt_str(obj["raw_output"]),
            option_scores=None if scores is None else tuple(float(s) for s in scores),
            class_name=str(obj["class_name"]),
            conditions=tuple(Condition.from_json(c) for c in obj["conditions"]),
            cgla_min=None if cgla_min is None else _finite(cgla_min, "cgla_min"),
            cgla_acc=_opt_bool(obj["cgla_acc"], "cgla_acc"),
            rotations=None
            if obj.get("rotations") is None
            else tuple(Rotation.from_json(r) for r in obj["rotations"]),
            blind=None if obj.get("blind") is None else Answer.from_json(obj["blind"]),
            option_probs=None
            if obj.get("option_probs") is None
            else tuple(float(p) for p in obj["option_probs"]),
        )


def _finite(value: Any, name: str) -> float:
    """A finite number: a run never writes NaN or infinity (``allow_nan=False``), so one in a file
    is an edit, refused rather than carried into every mean and interval."""
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer beyond the float range
        number = math.inf
    if not math.isfinite(number):
        text = repr(value)
        raise ValueError(f"field {name!r} must be a finite number, got {text[:40]}{'...' * (len(text) > 40)}")
    return number


def _optional(sample: SampleResult) -> dict[str, Any]:
    """The keys of the confound views, present only in runs that asked for them (so the lines of
    other runs are byte for byte those of before)."""
    out: dict[str, Any] = {}
    if sample.rotations is not None:
        out["rotations"] = [r.to_json() for r in sample.rotations]
    if sample.blind is not None:
        out["blind"] = sample.blind.to_json()
    if sample.option_probs is not None:
        out["option_probs"] = list(sample.option_probs)
    return out


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_bool(value: Any, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TypeError(f"field {name!r} must be true, false or null, got {value!r}")
