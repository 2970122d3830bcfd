"""``submit``'s check of results.json ``model.thinking`` against the run's own config and samples.

The Space marks a run ``thinking`` from ``model.thinking.mode: on`` (``space/replies.py``), so
the record is checked as :mod:`~mmspubench.eval.checkpoint.thinking` writes it, never guessed:

- an object of exactly ``mode`` (``on``/``off``), ``set_by`` (:data:`SET_BY_KWARG` or
  :data:`SET_BY_DEFAULT`) and ``scored_rendering`` (``enable_thinking=false``: a template that
  switches; ``none``: a model that always thinks, mode ``on``, set by its default; ``chat template
  as is``: a model that never thinks, asked ``--thinking off``, mode ``off``, set by its default);
- ``config.thinking`` ``on``/``off``: the mode is the one asked (a model that cannot give it is
  refused when it loads); ``auto``: the run set nothing, so never :data:`SET_BY_KWARG`. A record
  may be absent (``auto`` for a model that neither thinks nor switches, an engine that reports
  none): nothing is then claimed;
- ``scored_rendering: none`` (no faithful scored prompt) in a run that scored prompts (CGLA,
  ``logprob`` answers) is refused, as :func:`~mmspubench.eval.checkpoint.thinking.check_scoring`
  refuses the run itself;
- a sample's non-empty ``reasoning`` needs a style that splits one off (``model.reasoning_style``
  not ``none``) or a run that thought (``mode: on``): with style ``none`` only a server's reasoning
  apart is kept, and a run recording neither did not think.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval.checkpoint.thinking import KWARG, SET_BY_DEFAULT, SET_BY_KWARG
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results_file import Model, Results

FIELD = "model.thinking"
"""The checked record's path in results.json."""
SCORED_SWITCH = f"{KWARG}=false"
"""``scored_rendering`` of a template that switches (scored prompts rendered thinking off)."""
SCORED_NONE = "none"
"""``scored_rendering`` of a model that always thinks (no faithful scored prompt)."""
SCORED_AS_IS = "chat template as is"
"""``scored_rendering`` of a model that never thinks, asked ``--thinking off``."""
_KEYS = ("mode", "set_by", "scored_rendering")
_WRITTEN: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    SCORED_SWITCH: (("on", "off"), (SET_BY_KWARG, SET_BY_DEFAULT)),
    SCORED_NONE: (("on",), (SET_BY_DEFAULT,)),
    SCORED_AS_IS: (("off",), (SET_BY_DEFAULT,)),
}
"""Per ``scored_rendering``, the modes and ``set_by`` values written beside it."""
_JSON_KINDS: Mapping[type, str] = {
    str: "string",
    list: "array",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}
"""JSON's name of a parsed value's type."""


def _record_fault(record: Any) -> tuple[str, str] | None:
    """``(field, why)`` where ``record`` is not a ``model.thinking`` that thinking.py writes."""
    if not isinstance(record, Mapping):
        kind = _JSON_KINDS.get(type(record), type(record).__name__)
        return FIELD, f"a JSON {kind}, not an object of {', '.join(_KEYS)}"
    unknown = sorted(set(record) - set(_KEYS))
    if unknown:
        return f"{FIELD}.{unknown[0]}", f"unknown key; expected only {', '.join(_KEYS)}"
    missing = [k for k in _KEYS if k not in record]
    if missing:
        return f"{FIELD}.{missing[0]}", "missing"
    mode, set_by, scored = (record[k] for k in _KEYS)
    if mode not in ("on", "off"):
        return f"{FIELD}.mode", f"{mode!r} is not 'on' or 'off'"
    if set_by not in (SET_BY_KWARG, SET_BY_DEFAULT):
        return f"{FIELD}.set_by", f"{set_by!r} is not {SET_BY_KWARG!r} or {SET_BY_DEFAULT!r}"
    if scored not in _WRITTEN:
        return f"{FIELD}.scored_rendering", f"{scored!r} is not one of {', '.join(map(repr, _WRITTEN))}"
    modes, setters = _WRITTEN[scored]
    if mode not in modes or set_by not in setters:
        return (
            f"{FIELD}.scored_rendering",
            f"{scored!r} is not written beside mode {mode!r} set by {set_by!r}",
        )
    return None


def _config_fault(record: Mapping[str, Any], config: RunConfig) -> tuple[str, str] | None:
    """``(field, why)`` where a well-formed record disagrees with the run's config."""
    asked = config.thinking
    if asked in ("on", "off") and record["mode"] != asked:
        return f"{FIELD}.mode", f"{record['mode']!r} but the run asked --thinking {asked} (config.thinking)"
    if asked == "auto" and record["set_by"] == SET_BY_KWARG:
        return (
            f"{FIELD}.set_by",
            f"{SET_BY_KWARG!r} but the run asked --thinking auto (config.thinking), which sets nothing",
        )
    scores = "cgla" in config.metrics or config.answer_mode == "logprob"
    if record["scored_rendering"] == SCORED_NONE and scores:
        return (
            f"{FIELD}.scored_rendering",
            "'none' (no faithful scored prompt) but the run scored prompts (CGLA or logprob answers)",
        )
    return None


def check_thinking_record(results: Results, config: RunConfig, where: str) -> None:
    """results.json's ``model.thinking`` as thinking.py writes it and as the run's config shows it
    (module doc); raise on the first fault."""
    model = results.model or Model()
    if "thinking" not in model.fields:
        return
    thinking = model.get("thinking")
    fault = _record_fault(thinking) or _config_fault(thinking, config)
    if fault is not None:
        raise MMSpuBenchError(f"{where}: field {fault[0]!r}: {fault[1]}")


def check_thinking_samples(results: Results, samples: Sequence[SampleResult], samples_where: str) -> None:
    """No sample records reasoning in a run that records neither a reasoning style nor thinking on
    (module doc; ``model.thinking`` checked first by :func:`check_thinking_record`)."""
    model = results.model or Model()
    thinking = model.get("thinking")
    mode = thinking.get("mode") if isinstance(thinking, Mapping) else None
    if (model.get("reasoning_style") or "none") != "none" or mode == "on":
        return
    said = f"mode {mode!r}" if mode is not None else "no model.thinking"
    for sample in samples:
        reasoning = None if sample.reading is None else sample.reading.reasoning
        if reasoning and reasoning.strip():
            raise record_error(
                samples_where,
                sample.id,
                "reasoning",
                f"recorded, but results.json records {said} and reasoning style 'none' (the run did not think)",
            )
