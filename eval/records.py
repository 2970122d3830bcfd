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


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_bool(value: Any, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TypeError(f"field {name!r} must be true, false or null, got {value!r}")
