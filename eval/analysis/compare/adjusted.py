"""The p-values of a comparison adjusted for the number of tests in each table.

A table of ``compare`` tests the overall difference and the nine types': ten tests, so about one
p-value in twenty falls under 0.05 by chance alone. Each table's p-values form one family and are
adjusted together (Holm by default, which bounds the chance of any false claim in the table;
Benjamini-Hochberg with ``--adjust bh``, which bounds the share of false claims): the accuracy
table, the CGLA_acc table, circular and blind accuracy, and under each intervention both its
accuracy and its change. A type without items is not a test and is not in the family. The text
marks with ``*`` the differences whose adjusted p-value is below 0.05; the JSON holds both values
(``p_value``, ``p_adjusted``) and ``adjustment`` says how.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from mmspubench.eval.analysis.stats import BH, HOLM, adjust_present
from mmspubench.eval.analysis.stats.adjust import ALPHA

LABELS = {HOLM: "Holm", BH: "BH"}
"""How the tables name each adjustment."""
MARK = "*"
"""Appended to an adjusted p-value below :data:`~mmspubench.eval.analysis.stats.adjust.ALPHA`."""


def _adjust_family(figures: Iterable[dict[str, Any] | None], method: str) -> None:
    chosen = list(figures)
    adjusted = adjust_present([None if f is None else f["p_value"] for f in chosen], method)
    for figure, value in zip(chosen, adjusted, strict=True):
        if figure is not None:
            figure["p_adjusted"] = value


def with_adjusted(doc: dict[str, Any], method: str = HOLM) -> dict[str, Any]:
    """A copy of the comparison document with ``p_adjusted`` beside every ``p_value`` and its
    ``adjustment`` (method, level, what a family is)."""
    out = copy.deepcopy(doc)
    groups = out["groups"]
    # the rates of a group that carry a McNemar p-value (accuracy, CGLA_acc and the confound views'
    # rates the two runs have), each one family across the groups; first seen, first adjusted
    keys = dict.fromkeys(k for g in groups for k, v in g.items() if isinstance(v, dict) and "p_value" in v)
    for key in keys:
        _adjust_family((g.get(key) for g in groups), method)
    for name in (out.get("interventions") or {}).get("compared", []):
        for part in ("accuracy", "change"):
            _adjust_family(((g.get("interventions") or {}).get(name, {}).get(part) for g in groups), method)
    out["adjustment"] = {"method": method, "alpha": ALPHA, "family": "the groups of one table"}
    return out


def label(doc: dict[str, Any]) -> str:
    """The adjusted column's header: ``Holm p`` or ``BH p``."""
    return f"{LABELS[doc['adjustment']['method']]} p"


def cell(value: float | None) -> str:
    """An adjusted p-value as printed, marked when it is below 0.05."""
    from mmspubench.eval.analysis.compare.cli import format_p

    if value is None:
        return "—"
    return format_p(value) + (f" {MARK}" if value < ALPHA else "")


def note(doc: dict[str, Any]) -> str:
    """The line under the title that says what the adjusted column is."""
    method = doc["adjustment"]["method"]
    name = "Holm" if method == HOLM else "Benjamini-Hochberg"
    return (
        f"{label(doc)}: the p-values adjusted ({name}) across the rows of each table; "
        f"{MARK} marks a difference that stays significant at {ALPHA:g} after the adjustment"
    )
