"""The records of an evaluation: a scored condition and a per-item result (the item is ``schema.Item``).

All are frozen; a per-item result is built once, when the item has been fully scored, and written to
``samples.jsonl`` as one JSON line (``SampleResult.to_json`` / ``SampleResult.from_json``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mmspubench.eval.replies.record import READING_KEYS, ReplyReading, read_reading, reading_json

ConditionKind = Literal["core", "spurious"]
ANSWER_KEYS = ("prediction", "correct", "raw_output", "option_scores")
"""The fields of a view's answer (the blind one, or one rotation's) in samples.jsonl."""
ROTATION_KEYS = ("rotation", "order", "answer", *ANSWER_KEYS)
"""The fields of one rotation in samples.jsonl."""
INTERVENTION_KEYS = ("name", "targets", "digest", *ANSWER_KEYS, "cgls", "cgla_min", "cgla_acc")
"""The fields of one intervention's entry in samples.jsonl."""
PART = {"part": True}
"""The metadata of a :class:`SampleResult` field that is a built-in view's part (its sample key)."""
NUM_ROTATIONS = 4
"""Rotations per item in a circular run: one per option position (``schema.NUM_OPTIONS``, not
imported here so that reading records needs no ``datasets``)."""


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
    reading: ReplyReading | None = None
    """How the generated reply was read, and its cost (``generate`` mode), else ``None``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (the reading's keys only where they say something: ``replies.record``)."""
        return {
            "prediction": self.prediction,
            "correct": self.correct,
            "raw_output": self.raw_output,
            "option_scores": None if self.option_scores is None else list(self.option_scores),
            **reading_json(self.reading, self.prediction, self.raw_output),
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any], name: str = "blind") -> Answer:
        """Inverse of ``to_json``; ``name`` is the record's field (``blind``, ``rotations[2]``),
        named by every error (a view's answer is taken only with exactly its own fields)."""
        _check_keys(obj, name, ANSWER_KEYS, READING_KEYS)
        correct = _opt_bool(obj["correct"], f"{name}.correct")
        if correct is None:
            raise TypeError(f"field {name + '.correct'!r} must be true or false")
        prediction = _strict_str(obj["prediction"], f"{name}.prediction")
        raw_output = _strict_str(obj["raw_output"], f"{name}.raw_output")
        return Answer(
            prediction=prediction,
            correct=correct,
            raw_output=raw_output,
            option_scores=read_numbers(obj["option_scores"], f"{name}.option_scores"),
            reading=read_reading(obj, f"{name}.", prediction, raw_output),
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
    def from_json(obj: Mapping[str, Any], name: str = "rotation") -> Rotation:
        """Inverse of ``to_json``; ``name`` is the record's field, named by every error."""
        _check_keys(obj, name, ROTATION_KEYS, READING_KEYS)
        order = obj["order"]
        if not isinstance(order, list) or not all(_is_int(j) for j in order):
            raise TypeError(f"field {name + '.order'!r} must be a list of integers, got {_shown(order)}")
        if not _is_int(obj["rotation"]):
            raise TypeError(f"field {name + '.rotation'!r} must be an integer, got {_shown(obj['rotation'])}")
        answer = _strict_str(obj["answer"], f"{name}.answer")
        if answer is None:
            raise TypeError(f"field {name + '.answer'!r} must be a letter, got null")
        return Rotation(
            rotation=obj["rotation"],
            order=tuple(order),
            answer=answer,
            reply=Answer.from_json(_answer_keys(obj), name),
        )


@dataclass(frozen=True, slots=True)
class InterventionAnswer:
    """The item asked again with its image changed by one intervention, and what the model said."""

    name: str
    """The intervention: a built-in name or ``cf:NAME`` (``mmspubench.eval.intervention_names``)."""
    targets: tuple[str, ...]
    """Canonical names of the spurious types whose channel it changes (for the targeted contrast)."""
    digest: str
    """``interventions.pixel_digest`` of the image shown (SHA-256 of its mode, size and pixels)."""
    reply: Answer
    """The multiple-choice answer to the changed image (published option order)."""
    cgls: tuple[float, ...] | None
    """CGL of each of the sample's conditions, in their order, under the changed image (``cgla``)."""
    cgla_min: float | None
    """CGLA_min from ``cgls`` under the run's core reduction; ``None`` without ``cgla``."""
    cgla_acc: bool | None
    """``cgla_min > 0``; ``None`` without ``cgla``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict with the fields of :data:`INTERVENTION_KEYS`."""
        return {
            "name": self.name,
            "targets": list(self.targets),
            "digest": self.digest,
            **self.reply.to_json(),
            "cgls": None if self.cgls is None else list(self.cgls),
            "cgla_min": self.cgla_min,
            "cgla_acc": self.cgla_acc,
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any], name: str = "interventions") -> InterventionAnswer:
        """Inverse of ``to_json``; ``name`` is the record's field, named by every error."""
        _check_keys(obj, name, INTERVENTION_KEYS, READING_KEYS)
        label = _strict_str(obj["name"], f"{name}.name")
        digest = _strict_str(obj["digest"], f"{name}.digest")
        targets = obj["targets"]
        if label is None or digest is None:
            raise TypeError(
                f"field {name + ('.name' if label is None else '.digest')!r} must be a string, got null"
            )
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise TypeError(
                f"field {name + '.targets'!r} must be a list of type names, got {_shown(targets)}"
            )
        cgla_min = obj["cgla_min"]
        return InterventionAnswer(
            name=label,
            targets=tuple(targets),
            digest=digest,
            reply=Answer.from_json(_answer_keys(obj), name),
            cgls=read_numbers(obj["cgls"], f"{name}.cgls"),
            cgla_min=None if cgla_min is None else _finite(cgla_min, f"{name}.cgla_min"),
            cgla_acc=_opt_bool(obj["cgla_acc"], f"{name}.cgla_acc"),
        )


SCORING_KEYS = ("scorers", "fallback", "check")
"""The fields of a sample's ``scoring`` record in samples.jsonl."""
CHECK_KEYS = ("scores", "max_abs_diff")
"""The fields of a ``scoring.check`` record."""


@dataclass(frozen=True, slots=True)
class ScoreCheck:
    """A sample's scores computed a second time by the reference computation, and how far apart."""

    scores: int
    """Scores compared (CGL conditions, option letters and the views' scores of the sample)."""
    max_abs_diff: float
    """Largest |fast - reference| over them, in nats (0 when none was compared)."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict with the fields of :data:`CHECK_KEYS`."""
        return {"scores": self.scores, "max_abs_diff": self.max_abs_diff}

    @staticmethod
    def from_json(obj: Any, name: str = "scoring.check") -> ScoreCheck:
        """Inverse of ``to_json``; ``name`` is the record's field, named by every error."""
        _check_keys(obj, name, CHECK_KEYS)
        if not _is_int(obj["scores"]) or obj["scores"] < 0:
            raise TypeError(f"field {name + '.scores'!r} must be a count, got {_shown(obj['scores'])}")
        diff = _finite(obj["max_abs_diff"], f"{name}.max_abs_diff")
        if diff < 0:
            raise ValueError(f"field {name + '.max_abs_diff'!r} must not be negative, got {diff!r}")
        return ScoreCheck(scores=obj["scores"], max_abs_diff=diff)


@dataclass(frozen=True, slots=True)
class Scoring:
    """How a sample's scores were computed: which scorers ran, why any fell back, its check."""

    scorers: tuple[str, ...] | None
    """Scorers that scored the sample's requests (``fast``, ``plain``, sorted); ``None`` for an
    engine without that choice (vLLM, a server)."""
    fallback: str | None
    """Why some of its requests were scored plain although ``fast`` was asked for; else ``None``."""
    check: ScoreCheck | None
    """The fast path's check (one of the run's first ``--scorer-check`` items); else ``None``."""

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict with the fields of :data:`SCORING_KEYS`."""
        return {
            "scorers": None if self.scorers is None else list(self.scorers),
            "fallback": self.fallback,
            "check": None if self.check is None else self.check.to_json(),
        }

    @staticmethod
    def from_json(obj: Any, name: str = "scoring") -> Scoring:
        """Inverse of ``to_json``; ``name`` is the record's field, named by every error."""
        _check_keys(obj, name, SCORING_KEYS)
        scorers = obj["scorers"]
        if scorers is not None and (
            not isinstance(scorers, list)
            or not scorers
            or any(s not in SCORER_NAMES for s in scorers)
            or sorted(set(scorers)) != scorers
        ):
            raise ValueError(
                f"field {name + '.scorers'!r} must be null or a sorted list of {', '.join(SCORER_NAMES)}, "
                f"got {_shown(scorers) if not isinstance(scorers, list) else scorers!r}"
            )
        check = obj["check"]
        return Scoring(
            scorers=None if scorers is None else tuple(scorers),
            fallback=_strict_str(obj["fallback"], f"{name}.fallback"),
            check=None if check is None else ScoreCheck.from_json(check, f"{name}.check"),
        )


SCORER_NAMES = ("fast", "plain")
"""The transformers scorers a sample's ``scoring.scorers`` may name."""


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
    rotations: tuple[Rotation, ...] | None = dataclasses.field(default=None, metadata=PART)
    """The four cyclic rotations of the options, rotation 0 first (``circular``); else ``None``."""
    blind: Answer | None = dataclasses.field(default=None, metadata=PART)
    """The answer without the image (``blind``); else ``None``."""
    option_probs: tuple[float, ...] | None = dataclasses.field(default=None, metadata=PART)
    """Softmax of ``option_scores`` (``calibration``); else ``None``."""
    interventions: tuple[InterventionAnswer, ...] | None = dataclasses.field(default=None, metadata=PART)
    """The item asked under each intervention, in the run's order (``interventions``); else ``None``."""
    views: tuple[tuple[str, Any], ...] = ()
    """The parts of the views registered beyond the built-in ones, as (sample key, part) pairs in
    registry order (:meth:`part` reads any view's part by its key)."""
    scoring: Scoring | None = None
    """How its scores were computed (scorers, fallback, the fast path's check); ``None`` when the
    item made no ``score`` call through an engine that records it."""
    reading: ReplyReading | None = None
    """How ``raw_output`` was read (reasoning, answer text, truncated, read by) and what it cost
    (tokens, seconds); ``None`` without a generated answer."""

    def part(self, key: str) -> Any:
        """The part recorded under the sample key ``key`` (``None``: the run has not that view)."""
        if key in BUILTIN_PARTS:
            return getattr(self, key)
        return dict(self.views).get(key)

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
            **reading_json(self.reading, self.prediction, self.raw_output),
            "class_name": self.class_name,
            "conditions": [c.to_json() for c in self.conditions],
            "cgla_min": self.cgla_min,
            "cgla_acc": self.cgla_acc,
            **_parts_json(self),
            **({} if self.scoring is None else {"scoring": self.scoring.to_json()}),
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> SampleResult:
        """Inverse of ``to_json``; raises ``KeyError``/``ValueError``/``TypeError`` on a malformed line."""
        scores = obj["option_scores"]
        cgla_min = obj["cgla_min"]
        prediction, raw_output = _opt_str(obj["prediction"]), _opt_str(obj["raw_output"])
        return SampleResult(
            id=str(obj["id"]),
            types=tuple(str(t) for t in obj["types"]),
            answer=str(obj["answer"]),
            prediction=prediction,
            correct=_opt_bool(obj["correct"], "correct"),
            raw_output=raw_output,
            option_scores=read_numbers(scores, "option_scores"),
            class_name=str(obj["class_name"]),
            conditions=tuple(Condition.from_json(c) for c in obj["conditions"]),
            cgla_min=None if cgla_min is None else _finite(cgla_min, "cgla_min"),
            cgla_acc=_opt_bool(obj["cgla_acc"], "cgla_acc"),
            **_parts_of(obj),
            scoring=None if obj.get("scoring") is None else Scoring.from_json(obj["scoring"]),
            reading=read_reading(obj, "", prediction, raw_output),
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


def _shown(value: Any) -> str:
    """``value`` for an error line: its repr cut to 40 characters (a line may hold anything)."""
    text = repr(value) if isinstance(value, (int, float, str, type(None))) else type(value).__name__
    return f"{text[:40]}{'...' * (len(text) > 40)}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_numbers(value: Any, name: str) -> tuple[float, ...] | None:
    """``null`` or a list of JSON numbers as floats. A boolean or a string is refused, not read
    as 1.0 or parsed; an integer beyond the float range reads as infinity, which the checks of
    the scores refuse by name (``float()`` alone would raise a bare ``OverflowError``)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"field {name!r} must be a list of numbers or null, got {_shown(value)}")
    out = []
    for item in value:
        if not isinstance(item, (int, float)) or isinstance(item, bool):
            raise TypeError(f"field {name!r} must hold numbers only, got {_shown(item)}")
        try:
            out.append(float(item))
        except OverflowError:
            out.append(math.inf if item > 0 else -math.inf)
    return tuple(out)


def _check_keys(obj: Any, name: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """``obj`` is an object with exactly ``keys`` and any of ``optional``: a field a view's record
    does not have is refused (nothing in a record is skipped unread)."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"field {name!r} must be an object, got {_shown(obj)}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise ValueError(f"field {name!r}: missing key {missing[0]!r}")
    unknown = sorted(str(k) for k in obj if k not in keys and k not in optional)
    if unknown:
        raise ValueError(f"field {name!r}: unknown key {unknown[0][:40]!r} (expected {', '.join(keys)})")


def _answer_keys(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of an answer (with its reading's) out of a rotation's or an intervention's object."""
    return {k: obj[k] for k in (*ANSWER_KEYS, *READING_KEYS) if k in obj}


def reading_of(answer: SampleResult | Answer) -> ReplyReading | None:
    """The reading of a generated answer, the implied one (``replies.record``) where its line
    recorded none; ``None`` for an answer without ``raw_output``."""
    if answer.raw_output is None:
        return None
    if answer.reading is not None:
        return answer.reading
    return ReplyReading(answer.raw_output.strip(), "parser" if answer.prediction is not None else "none")


def read_rotations(value: Any) -> tuple[Rotation, ...] | None:
    """``rotations``: ``null``, or a list of the four rotation objects (checked as a record
    before anything reads them; their order and answers are checked by ``results_confounds``)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"field 'rotations' must be a list of {NUM_ROTATIONS} objects, got {_shown(value)}")
    if len(value) != NUM_ROTATIONS:
        raise ValueError(
            f"field 'rotations' holds {len(value)} entries; expected {NUM_ROTATIONS} (rotations 0-3)"
        )
    return tuple(Rotation.from_json(r, f"rotations[{i}]") for i, r in enumerate(value))


def read_interventions(value: Any) -> tuple[InterventionAnswer, ...] | None:
    """``interventions``: ``null``, or a list of entry objects (their names and answers are checked
    by ``results_interventions``)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"field 'interventions' must be a list of objects, got {_shown(value)}")
    return tuple(InterventionAnswer.from_json(e, f"interventions[{i}]") for i, e in enumerate(value))


BUILTIN_PARTS = tuple(f.name for f in dataclasses.fields(SampleResult) if f.metadata.get("part"))
"""The sample keys of the built-in views, each a typed field of :class:`SampleResult`."""


def _strict_str(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"field {name!r} must be a string or null, got {_shown(value)}")


def _parts_json(sample: SampleResult) -> dict[str, Any]:
    """The parts of the views the run computed, in registry order (a view's key is present only
    in runs that asked for it, so the lines of other runs are byte for byte those of before)."""
    from mmspubench.eval.views.registry import VIEWS

    out: dict[str, Any] = {}
    for view in VIEWS.values():
        value = None if view.part is None else sample.part(view.part.key)
        if view.part is not None and value is not None:
            out[view.part.key] = view.part.write(value)
    return out


def _parts_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The views' parts of a line as :class:`SampleResult` arguments (the built-in views' typed
    fields, the others under ``views``), each read by its view."""
    from mmspubench.eval.views.registry import VIEWS

    return part_fields(
        {
            view.part.key: view.part.read(obj[view.part.key])
            for view in VIEWS.values()
            if view.part is not None and obj.get(view.part.key) is not None
        }
    )


def part_fields(parts: Mapping[str, Any]) -> dict[str, Any]:
    """Views' parts by sample key as :class:`SampleResult` arguments: the built-in views' typed
    fields, the others under ``views`` in the given order (a ``None`` part is no part)."""
    fields = {key: value for key, value in parts.items() if key in BUILTIN_PARTS and value is not None}
    others = tuple(
        (key, value) for key, value in parts.items() if key not in BUILTIN_PARTS and value is not None
    )
    return {**fields, "views": others} if others else fields


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_bool(value: Any, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TypeError(f"field {name!r} must be true, false or null, got {value!r}")
