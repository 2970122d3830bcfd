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


def pct(value: Any) -> str:
    """A percentage with two decimals, or a dash when ``value`` is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DASH
    return f"{float(value):.2f}"


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
