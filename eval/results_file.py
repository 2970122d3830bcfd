"""results.json as typed records: the one place that reads and writes its layout.

``Results.from_json`` parses and checks a file's object once, naming the file and the field it
refuses; code behind it reads typed fields (``results.model.id``, ``results.accuracy.overall``)
instead of ``dict`` look-ups. ``to_json`` writes the object back key for key: each record keeps the
keys it was read with, in order, and the keys it does not type (``extra``), so a file read and
written back is byte-identical, and a new key written by a newer version is never dropped.

The ``accuracy`` and ``cgla`` sections are typed here; every other view owns its section
(:mod:`mmspubench.eval.views`), held as a mapping keyed by view name (``Results.section``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.replies.summary import SECTION, check_section

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

BENCHMARK = "MM-SpuBench"
"""The ``benchmark`` field of every results.json."""
Interval = tuple[float, float]
"""A 95% bootstrap interval, low then high, in percent."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(where: str, name: str, value: Any, ok: bool, expected: str) -> None:
    if not ok:
        raise MMSpuBenchError(f"{where}: field {name!r} is not {expected} (got {str(value)[:80]!r})")


def _number(obj: Mapping[str, Any], key: str, where: str, prefix: str) -> float | None:
    value = obj.get(key)
    if not (value is None or _is_number(value)):
        raise MMSpuBenchError(f"{where}: field {prefix + key!r}: value {value!r} is not a finite number")
    return value


def _integer(obj: Mapping[str, Any], key: str, where: str, prefix: str) -> int | None:
    value = obj.get(key)
    ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
    _check(where, prefix + key, value, ok, "an integer or null")
    return value


def _text(obj: Mapping[str, Any], key: str, where: str, prefix: str) -> str | None:
    value = obj.get(key)
    _check(where, prefix + key, value, value is None or isinstance(value, str), "a string or null")
    return value


def _stamp(obj: Mapping[str, Any], key: str, where: str, refusal: str) -> str | None:
    """``created_at``/``package_version``: a string or absent (submit checks its form, same line)."""
    value = obj.get(key)
    if not (value is None or isinstance(value, str)):
        raise MMSpuBenchError(f"{where}: field {key!r}: {value!r} {refusal}")
    return value


def _mapping(obj: Mapping[str, Any], key: str, where: str, prefix: str = "") -> Mapping[str, Any] | None:
    value = obj.get(key)
    if not (value is None or isinstance(value, Mapping)):
        name = prefix + key
        raise MMSpuBenchError(f"{where}: field {name!r} is {type(value).__name__}; expected an object")
    return value


def _numbers(obj: Mapping[str, Any], key: str, where: str, prefix: str) -> Mapping[str, float | None] | None:
    """A ``{type: number or null}`` field (``by_type``)."""
    value = _mapping(obj, key, where, prefix)
    for name in value or {}:
        _number(value or {}, name, where, f"{prefix}{key}.")
    return value


def _interval(value: Any) -> Interval | None:
    """``[low, high]`` as a tuple, ``None`` when it is not two numbers."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_is_number(v) for v in value):
        return (float(value[0]), float(value[1]))
    return None


def _written(record: Any, typed: frozenset[str], rest: Mapping[str, Any]) -> dict[str, Any]:
    """``record``'s keys in the order read: a typed key from its field (each field is named as its
    key), any other from ``rest``."""
    out: dict[str, Any] = {}
    for key in record.keys:
        if key in typed:
            value = getattr(record, key)
            out[key] = value.to_json() if hasattr(value, "to_json") else value
        else:
            out[key] = rest[key]
    return out


def _untyped(obj: Mapping[str, Any], typed: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in typed}


@dataclass(frozen=True, slots=True)
class Accuracy:
    """results.json ``accuracy``: the multiple-choice accuracy overall and per type (percent)."""

    overall: float | None = None
    """Share of items answered correctly."""
    average: float | None = None
    """Table 2's ``Average``: the unweighted mean of the per-type accuracies."""
    by_type: Mapping[str, float | None] | None = None
    """Accuracy per spurious type (abbreviation -> percent; ``None``: no item of that type)."""
    ci95: Any = None
    """Bootstrap intervals as written: ``overall`` ([low, high]) and ``by_type`` (see ``ci95_overall``)."""
    unparsed: int | None = None
    """Answers no option letter could be read from."""
    n: int | None = None
    """Items scored."""
    n_by_type: Any = None
    """Items per spurious type, as written (an object of counts in a file eval wrote)."""
    worst_type: Mapping[str, Any] | None = None
    """The type of lowest accuracy (``type``, ``value``), written with a confound view in the run."""
    worst_gap: float | None = None
    """``average`` minus the worst type's accuracy, written with ``worst_type``."""
    keys: tuple[str, ...] = ()
    """The keys as written, in order (``to_json`` writes these back)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys this record does not type, as written."""

    @property
    def ci95_overall(self) -> Interval | None:
        """The interval of ``overall``."""
        return _interval(self.ci95.get("overall")) if isinstance(self.ci95, Mapping) else None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], where: str) -> Accuracy:
        """Parse the ``accuracy`` object, refusing a field of the wrong type."""
        p = "accuracy."
        return cls(
            overall=_number(obj, "overall", where, p),
            average=_number(obj, "average", where, p),
            by_type=_numbers(obj, "by_type", where, p),
            ci95=obj.get("ci95"),
            unparsed=_integer(obj, "unparsed", where, p),
            n=_integer(obj, "n", where, p),
            n_by_type=obj.get("n_by_type"),
            worst_type=_mapping(obj, "worst_type", where, p),
            worst_gap=_number(obj, "worst_gap", where, p),
            keys=tuple(obj),
            extra=_untyped(obj, _ACCURACY_KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        """The object as written in results.json."""
        return _written(self, _ACCURACY_KEYS, self.extra)


@dataclass(frozen=True, slots=True)
class Cgla:
    """results.json ``cgla``: CGLA_acc overall and per type (percent) and the mean CGLA_min."""

    acc: float | None = None
    """CGLA_acc: share of items whose CGLA_min is positive."""
    by_type: Mapping[str, float | None] | None = None
    """CGLA_acc per spurious type."""
    ci95: Any = None
    """Bootstrap interval of ``acc`` as written (``acc``: [low, high]; see ``ci95_acc``)."""
    mean_cgla_min: float | None = None
    """Mean CGLA_min over the items."""
    mean_cgla_min_by_type: Mapping[str, float | None] | None = None
    """Mean CGLA_min per spurious type."""
    core_reduction: str | None = None
    """How the core attributes' log-likelihoods were reduced (``mean``, ``max``...)."""
    n: int | None = None
    """Items scored."""
    n_by_type: Any = None
    """Items per spurious type, as written (an object of counts in a file eval wrote)."""
    keys: tuple[str, ...] = ()
    """The keys as written, in order (``to_json`` writes these back)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys this record does not type, as written."""

    @property
    def ci95_acc(self) -> Interval | None:
        """The interval of ``acc``."""
        return _interval(self.ci95.get("acc")) if isinstance(self.ci95, Mapping) else None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], where: str) -> Cgla:
        """Parse the ``cgla`` object, refusing a field of the wrong type."""
        p = "cgla."
        return cls(
            acc=_number(obj, "acc", where, p),
            by_type=_numbers(obj, "by_type", where, p),
            ci95=obj.get("ci95"),
            mean_cgla_min=_number(obj, "mean_cgla_min", where, p),
            mean_cgla_min_by_type=_numbers(obj, "mean_cgla_min_by_type", where, p),
            core_reduction=_text(obj, "core_reduction", where, p),
            n=_integer(obj, "n", where, p),
            n_by_type=obj.get("n_by_type"),
            keys=tuple(obj),
            extra=_untyped(obj, _CGLA_KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        """The object as written in results.json."""
        return _written(self, _CGLA_KEYS, self.extra)


def _ident(obj: Mapping[str, Any], where: str, name: str) -> tuple[str | None, str | None]:
    """``id`` (a string or absent) and ``revision`` (as text) of the ``name`` object."""
    ident, revision = obj.get("id"), obj.get("revision")
    _check(where, f"{name}.id", ident, ident is None or isinstance(ident, str), "a string or null")
    return ident, None if revision is None else str(revision)


@dataclass(frozen=True, slots=True)
class Dataset:
    """results.json ``dataset``: what was evaluated. Every field is kept as written (``fields``, in
    order): the identity fields differ by source (a Hub repository, a local folder)."""

    id: str | None = None
    """The Hub repository id (absent for a local folder, which has ``path``)."""
    revision: str | None = None
    """The commit read, when recorded."""
    split: str | None = None
    """The split evaluated."""
    n: int | None = None
    """Items evaluated (``None`` when absent or not an integer: ``get("n")`` has what was written)."""
    split_n: int | None = None
    """Items in the split (``n`` is smaller for a partial run; ``None`` as for ``n``)."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Every field as written, in order."""

    def get(self, key: str, default: Any = None) -> Any:
        """A field as written (``path``, ``content_hash``...), ``default`` when absent."""
        return self.fields.get(key, default)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], where: str) -> Dataset:
        """Parse the ``dataset`` object."""
        ident, revision = _ident(obj, where, "dataset")
        split = obj.get("split")
        n, split_n = obj.get("n"), obj.get("split_n")
        return cls(
            id=ident,
            revision=revision,
            split=None if split is None else str(split),
            n=n if _is_count(n) else None,
            split_n=split_n if _is_count(split_n) else None,
            fields=dict(obj),
        )

    def to_json(self) -> dict[str, Any]:
        """The object as written in results.json."""
        return dict(self.fields)


@dataclass(frozen=True, slots=True)
class Model:
    """results.json ``model``: the model evaluated and how its continuations were scored. Every
    field is kept as written (``fields``, in order): identity fields differ by source."""

    id: str | None = None
    """The Hub repository id, a local path or an API model name."""
    revision: str | None = None
    """The commit loaded, when recorded."""
    scorer_used: str | None = None
    """The continuation scorer used (``fast``, ``reference``...), when one scored."""
    scorer_fallback_reason: str | None = None
    """Why the fast scorer was not used, when it was not."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Every field as written, in order."""

    def get(self, key: str, default: Any = None) -> Any:
        """A field as written (``scorer_check``, identity fields), ``default`` when absent."""
        return self.fields.get(key, default)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], where: str) -> Model:
        """Parse the ``model`` object."""
        ident, revision = _ident(obj, where, "model")
        used, reason = obj.get("scorer_used"), obj.get("scorer_fallback_reason")
        return cls(
            id=ident,
            revision=revision,
            scorer_used=None if used is None else str(used),
            scorer_fallback_reason=None if reason is None else str(reason),
            fields=dict(obj),
        )

    def to_json(self) -> dict[str, Any]:
        """The object as written in results.json."""
        return dict(self.fields)


_ACCURACY_KEYS = frozenset(f.name for f in fields(Accuracy)) - {"keys", "extra"}
_CGLA_KEYS = frozenset(f.name for f in fields(Cgla)) - {"keys", "extra"}
_CORE = ("schema_version", "benchmark", "dataset", "model", "config")
_TAIL = ("timing", "backend", "environment", "accuracy_only", "created_at", "package_version")


def _paper() -> tuple[str, ...]:
    """The paper's views (typed here as fields, after the core keys), as the registry names them."""
    from mmspubench.eval.views.registry import paper

    return paper()


def _typed_top() -> frozenset[str]:
    return frozenset((*_CORE, *_paper(), *_TAIL, "harness", SECTION))


@dataclass(frozen=True, slots=True)
class Results:
    """A results.json: what was evaluated, how, the figures of every view and what produced them."""

    benchmark: str | None = BENCHMARK
    """``MM-SpuBench`` (a file without it is refused by :func:`read_results_file`)."""
    schema_version: int | None = None
    """Version of the results.json / samples.jsonl layout."""
    dataset: Dataset | None = None
    """The dataset evaluated: ``id``, ``revision``, ``split``, ``n`` (items evaluated)..."""
    model: Model | None = None
    """The model evaluated: ``id``, ``revision``, its identity and scorer fields."""
    config: Any = None
    """The run's options as written: an object in a file eval wrote (``run_config`` parses and
    checks it, with the refusal every reader gives; ``options`` reads it as an object)."""
    accuracy: Accuracy | None = None
    """The ``accuracy`` section (``None`` when that view did not run)."""
    cgla: Cgla | None = None
    """The ``cgla`` section (``None`` when that view did not run)."""
    sections: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    """Every other view's section, keyed by view name, as written (each view owns its layout)."""
    replies: Mapping[str, Any] | None = None
    """How the generated replies were read and what they cost (:mod:`mmspubench.eval.replies.summary`,
    checked when read); ``None`` in logprob mode and in a run written before the section existed."""
    timing: Mapping[str, Any] | None = None
    """Seconds spent (``total_seconds``, ``cgla_seconds``...) and the number of ``parts``."""
    backend: Mapping[str, Any] | None = None
    """The engine's name, version and settings."""
    environment: Mapping[str, Any] | None = None
    """What produced the run (Python, libraries, hardware)."""
    accuracy_only: bool | None = None
    """True when CGLA was not measured."""
    created_at: str | None = None
    """When the file was written (ISO 8601, UTC)."""
    package_version: str | None = None
    """The mm-spubench version that wrote it."""
    harness: Mapping[str, Any] | None = None
    """The outside harness a run was ingested from (``name``, ``version``, ``source``, ``model``)."""
    keys: tuple[str, ...] = ()
    """The top-level keys as written, in order (``to_json`` writes these back)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Top-level keys this record types neither as a field nor as a section, as written."""

    def section(self, name: str) -> Mapping[str, Any] | None:
        """The section of view ``name`` (``None`` when the run did not compute it)."""
        if name in _paper():
            typed = getattr(self, name)
            return None if typed is None else typed.to_json()
        return self.sections.get(name)

    @property
    def options(self) -> Mapping[str, Any]:
        """``config`` when it is an object, else empty (an edited file shows dashes, not a crash)."""
        return self.config if isinstance(self.config, Mapping) else {}

    @property
    def answer_mode(self) -> str | None:
        """The config's ``answer_mode`` (``generate`` or ``logprob``), when recorded."""
        value = self.options.get("answer_mode")
        return None if value is None else str(value)

    @property
    def metrics(self) -> list[str] | None:
        """The views the run was asked for (config ``metrics``); ``None`` in an older file."""
        value = self.options.get("metrics")
        return None if value is None else list(value)

    def run_config(self, where: str | Path) -> RunConfig:
        """The run's options, parsed; a malformed ``config`` is refused naming ``where``."""
        from mmspubench.eval.config import RunConfig

        try:
            if self.config is None:
                raise KeyError("config")
            return RunConfig.from_json(self.config)
        except (KeyError, ValueError, TypeError, AttributeError) as err:
            raise MMSpuBenchError(f"{where}: field 'config' is malformed ({err})") from err

    @classmethod
    def from_json(cls, obj: Any, where: str | Path) -> Results:
        """Parse a results.json object; refuses (naming ``where`` and the field) what is not one."""
        w = str(where)
        if not isinstance(obj, Mapping) or obj.get("benchmark", BENCHMARK) != BENCHMARK:
            raise MMSpuBenchError(f"{w}: not an {BENCHMARK} results.json (field 'benchmark')")
        version = obj.get("schema_version")
        _check(w, "schema_version", version, version is None or isinstance(version, int), "an integer")
        accuracy, cgla = _mapping(obj, "accuracy", w), _mapping(obj, "cgla", w)
        dataset, model = _mapping(obj, "dataset", w), _mapping(obj, "model", w)
        only = obj.get("accuracy_only")
        _check(w, "accuracy_only", only, only is None or isinstance(only, bool), "true, false or null")
        rest = _untyped(obj, _typed_top())
        return cls(
            benchmark=obj.get("benchmark"),
            schema_version=version,
            dataset=None if dataset is None else Dataset.from_json(dataset, w),
            model=None if model is None else Model.from_json(model, w),
            config=obj.get("config"),
            accuracy=None if accuracy is None else Accuracy.from_json(accuracy, w),
            cgla=None if cgla is None else Cgla.from_json(cgla, w),
            sections={k: v for k, v in rest.items() if v is None or isinstance(v, Mapping)},
            replies=check_section(obj.get(SECTION), w),
            timing=_mapping(obj, "timing", w),
            backend=_mapping(obj, "backend", w),
            environment=_mapping(obj, "environment", w),
            accuracy_only=only,
            created_at=_stamp(obj, "created_at", w, "is not an ISO time"),
            package_version=_stamp(obj, "package_version", w, "is not a package version"),
            harness=_mapping(obj, "harness", w),
            keys=tuple(obj),
            extra={k: v for k, v in rest.items() if not (v is None or isinstance(v, Mapping))},
        )

    @classmethod
    def of(cls, results: Results | Mapping[str, Any], where: str | Path) -> Results:
        """``results`` as a record: as it is, or parsed from a results.json object (``where``)."""
        return results if isinstance(results, Results) else cls.from_json(results, where)

    def to_json(self) -> dict[str, Any]:
        """The object as written in results.json, key for key."""
        return _written(self, _typed_top(), {**self.sections, **self.extra})

    @classmethod
    def written(cls, **values: Any) -> Results:
        """A new results.json in the layout eval writes: the core keys, ``accuracy``, ``cgla``,
        the other sections in registry order, ``replies`` (generate mode), then timing and
        provenance (``harness`` only when given). ``values``: every field but ``keys`` and ``extra``."""
        sections = values.get("sections") or {}
        harness = ("harness",) if values.get("harness") is not None else ()
        replies = (SECTION,) if values.get("replies") is not None else ()
        return cls(**values, keys=(*_CORE, *_paper(), *sections, *replies, *_TAIL, *harness))


def read_results_file(path: str | Path) -> Results:
    """Read and check a results.json, with a one-line error naming the file when it is not one."""
    from mmspubench.dataset_builder.json_strict import load_file

    try:
        obj = load_file(Path(path))
    except MMSpuBenchError as err:
        raise MMSpuBenchError(f"cannot read results: {err}") from None
    if not isinstance(obj, Mapping) or obj.get("benchmark") != BENCHMARK:
        raise MMSpuBenchError(f"{path}: not an {BENCHMARK} results.json (field 'benchmark')")
    return Results.from_json(obj, path)
