"""The records of an evaluation: a benchmark item, a scored condition, a per-item result, the run config.

All are frozen; a per-item result is built once, when the item has been fully scored, and written to
``samples.jsonl`` as one JSON line (``SampleResult.to_json`` / ``SampleResult.from_json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from PIL.Image import Image

ConditionKind = Literal["core", "spurious"]
AnswerMode = Literal["generate", "logprob"]
ScorerName = Literal["plain", "fast"]
CoreReduction = Literal["best", "mean", "first"]

METRICS: tuple[str, ...] = ("accuracy", "cgla")
"""The metrics a run can compute, in the order they are run."""
ANSWER_MODES: tuple[str, ...] = ("generate", "logprob")
SCORERS: tuple[str, ...] = ("plain", "fast")
CORE_REDUCTIONS: tuple[str, ...] = ("best", "mean", "first")


@dataclass(frozen=True, slots=True)
class Item:
    """One benchmark item, with ClassLabel integers already turned into names."""

    id: str
    """Stable item id, e.g. ``"000042"``."""
    image: Image
    """The item's image, decoded."""
    question: str
    """Multiple-choice question text."""
    options: tuple[str, ...]
    """The four option texts, without their ``A.`` prefixes."""
    answer: str
    """Correct option letter, ``A``..``D``."""
    class_name: str
    """Ground-truth class name: the continuation scored by CGL."""
    core_attributes: tuple[str, ...]
    """Core attribute texts (1-5)."""
    spurious_attributes: tuple[str, ...]
    """Spurious attribute texts (1-5)."""
    types: tuple[str, ...]
    """Canonical spurious-type names (1-2), e.g. ``("background",)``."""
    source: str
    """Source dataset name, e.g. ``ObjectNet``."""


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
            cgl=float(obj["cgl"]),
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
        """JSON-ready dict with the DESIGN.md field names."""
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
            cgla_min=None if cgla_min is None else float(cgla_min),
            cgla_acc=_opt_bool(obj["cgla_acc"], "cgla_acc"),
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_bool(value: Any, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TypeError(f"field {name!r} must be true, false or null, got {value!r}")


@dataclass(frozen=True, slots=True)
class RunConfig:
    """The options of one ``mmspubench eval`` run, written into results.json as ``config``."""

    model: str
    """Model as given by the user: Hub id or local folder."""
    dataset: str
    """Dataset as given by the user: Hub id, built folder or raw release."""
    split: str = "test"
    """Dataset split."""
    metrics: tuple[str, ...] = METRICS
    """Subset of ``("accuracy", "cgla")``."""
    answer_mode: AnswerMode = "generate"
    """``generate`` (greedy answer + parser) or ``logprob`` (argmax of option-letter scores)."""
    scorer: ScorerName = "fast"
    """Continuation scorer of the adapter: ``plain`` or ``fast`` (shared-prefix cache)."""
    batch_size: int = 8
    """Items per ``generate`` call and requests per forward pass in the adapter."""
    device: str = "cpu"
    """Torch device, e.g. ``cpu`` or ``cuda``."""
    dtype: str = "float32"
    """Torch dtype the model runs in."""
    limit: int | None = None
    """Evaluate only the first ``limit`` items (dataset order); ``None`` for all."""
    core_reduction: CoreReduction = "best"
    """How the CGLs of several core attributes become one: ``best`` (max), ``mean`` or ``first``."""
    seed: int = 0
    """Seed of the bootstrap confidence intervals."""
    max_new_tokens: int = 16
    """Generation length in ``generate`` mode."""
    prompts: Mapping[str, Any] = field(default_factory=dict)
    """Prompt templates with their version (``mmspubench.eval.prompts.prompt_spec()``)."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of every option."""
        return {
            "model": self.model,
            "dataset": self.dataset,
            "split": self.split,
            "metrics": list(self.metrics),
            "answer_mode": self.answer_mode,
            "scorer": self.scorer,
            "batch_size": self.batch_size,
            "device": self.device,
            "dtype": self.dtype,
            "limit": self.limit,
            "core_reduction": self.core_reduction,
            "seed": self.seed,
            "max_new_tokens": self.max_new_tokens,
            "prompts": dict(self.prompts),
        }

    def identity(self) -> dict[str, Any]:
        """The options that change what a sample holds; a resumed run must match them exactly.

        Batch size, device and scorer are left out on purpose: they change speed, not the
        recorded figures beyond float noise, so a run may resume on another machine.
        """
        full = self.to_json()
        for key in ("batch_size", "device", "scorer"):
            del full[key]
        return full

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> RunConfig:
        """Inverse of ``to_json``."""
        limit = obj["limit"]
        return RunConfig(
            model=str(obj["model"]),
            dataset=str(obj["dataset"]),
            split=str(obj["split"]),
            metrics=tuple(str(m) for m in obj["metrics"]),
            answer_mode=obj["answer_mode"],
            scorer=obj["scorer"],
            batch_size=int(obj["batch_size"]),
            device=str(obj["device"]),
            dtype=str(obj["dtype"]),
            limit=None if limit is None else int(limit),
            core_reduction=obj["core_reduction"],
            seed=int(obj["seed"]),
            max_new_tokens=int(obj["max_new_tokens"]),
            prompts=dict(obj["prompts"]),
        )
