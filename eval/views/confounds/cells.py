"""Cells of ``mmspubench report`` that the views' columns share: percentages read from a section."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

DASH = "—"
"""A figure that was not computed (a type without items, a metric not run)."""


def section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is an object, else empty (a hand-edited file shows dashes, not a crash)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def fixed(value: float, digits: int = 2, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (``signed``: with its sign, ``+1.50``); a value that rounds to
    zero reads ``0.00`` (``+0.00`` signed), never ``-0.00``."""
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = ("+" if signed else "") + text[1:]
    return text


def interval(ci: Sequence[float], digits: int = 2) -> str:
    """``[-4.00, +5.67]``: an interval of a difference, each end signed (:func:`fixed`)."""
    return f"[{fixed(ci[0], digits, True)}, {fixed(ci[1], digits, True)}]"


def pct(value: Any) -> str:
    """A percentage with two decimals, or a dash when ``value`` is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DASH
    return fixed(float(value))


def section_pct(name: str, key: str, signed: bool = False) -> Callable[[Mapping[str, Any]], str]:
    """The cell of ``results[name][key]`` (``signed``: a positive value with its ``+``)."""

    def cell(results: Mapping[str, Any]) -> str:
        value = section(results, name).get(key)
        text = pct(value)
        return f"+{text}" if signed and isinstance(value, (int, float)) and value > 0 else text

    return cell


def any_section(name: str) -> Callable[[Sequence[Mapping[str, Any]]], bool]:
    """Whether some run has a non-empty ``name`` section."""
    return lambda runs: any(section(run, name) for run in runs)


def worst_types(accuracy: Mapping[str, Any]) -> str:
    """The types of ``accuracy.worst_type``'s value, ``/``-joined in the paper's order: the recorded
    worst type and every other type with as many items (>= 10, as it) and the same accuracy, so a
    tie shows (``CO/Sha.``); empty without a worst type."""
    from mmspubench.eval.views.confounds.metrics import WORST_MIN_ITEMS

    worst = section(accuracy, "worst_type")
    if not worst:
        return ""
    value, by_type, n_by_type = (
        worst.get("value"),
        section(accuracy, "by_type"),
        section(accuracy, "n_by_type"),
    )
    tied = [
        str(t)
        for t, v in by_type.items()
        if t != worst.get("type")
        and v == value
        and isinstance(n_by_type.get(t), int)
        and n_by_type[t] >= WORST_MIN_ITEMS
    ]
    return "/".join([str(worst.get("type")), *tied])
