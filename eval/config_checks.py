"""The type and range check of every :class:`~mmspubench.eval.config.RunConfig` field.

``RunConfig.validate`` calls :func:`check_fields` before anything is loaded, so a bad option (a
negative seed, a zero batch size, a NaN timeout, a limit given as text through the API) is one
line naming the flag, the value and what was expected, and no run starts with it. Each field's
type comes from its annotation; its range from the ``minimum``/``maximum`` of its ``option``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from collections.abc import Mapping
from typing import Any

from mmspubench.errors import MMSpuBenchError

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Control characters (newline and ESC among them): a run folder, model id or URL holding one would
break the one closing line and drive the terminal when it is printed."""
MULTILINE_TEXT: frozenset[str] = frozenset({"engine_args"})
"""Text options that may span lines (a JSON object)."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _kinds(hint: Any) -> tuple[set[type], bool]:
    """The plain types an annotation allows and whether it allows ``None``."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        kinds: set[type] = set()
        nullable = False
        for arg in typing.get_args(hint):
            if arg is type(None):
                nullable = True
            else:
                kinds |= _kinds(arg)[0]
        return kinds, nullable
    if origin is typing.Literal:
        return {type(arg) for arg in typing.get_args(hint)}, False
    if origin is not None:
        return {origin}, False
    return {hint}, False


def _type_ok(value: Any, kinds: set[type]) -> bool:
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and (int in kinds or float in kinds):
        return True
    if isinstance(value, float) and float in kinds:
        return True
    if isinstance(value, str) and str in kinds:
        return True
    if isinstance(value, tuple) and tuple in kinds:
        return all(isinstance(v, str) for v in value)
    return isinstance(value, Mapping) and bool(kinds & {Mapping, dict})


def _names(kinds: set[type]) -> str:
    names = {
        bool: "true/false",
        int: "an integer",
        float: "a number",
        str: "a text",
        tuple: "a list of texts",
    }
    return " or ".join(sorted(names.get(k, "a mapping") for k in kinds))


def check_field(f: dataclasses.Field[Any], hint: Any, value: Any) -> None:
    """Refuse ``value`` for field ``f`` when its type or range is wrong (one line)."""
    kinds, nullable = _kinds(hint)
    if value is None:
        if nullable:
            return
        raise MMSpuBenchError(f"{_flag(f.name)}: a value is required, got None")
    if not _type_ok(value, kinds):
        raise MMSpuBenchError(f"{_flag(f.name)} {value!r}: expected {_names(kinds)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise MMSpuBenchError(f"{_flag(f.name)} {value!r}: expected a finite number")
    if isinstance(value, str) and not value.strip():
        raise MMSpuBenchError(f"{_flag(f.name)}: empty; expected a non-empty text")
    if isinstance(value, str) and f.name not in MULTILINE_TEXT and CONTROL.search(value):
        raise MMSpuBenchError(f"{_flag(f.name)} {value!r}: a control character; expected printable text")
    low, high = f.metadata.get("minimum"), f.metadata.get("maximum")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and ((low is not None and value < low) or (high is not None and value > high)):
        raise MMSpuBenchError(f"{_flag(f.name)} must be {f.metadata['expect']}, got {value!r}")


def check_fields(config: Any) -> None:
    """Check the type and range of every field of ``config`` (a ``RunConfig``, a backend's ``Options``)."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        if hints[f.name] is not Any:  # e.g. the backend's options, checked as their own dataclass
            check_field(f, hints[f.name], getattr(config, f.name))
