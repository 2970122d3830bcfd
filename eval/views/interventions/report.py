"""The interventions tables of ``mmspubench report``: shown only when a run has the section.

Read from results.json's ``interventions`` section (``eval --metrics accuracy,interventions``):

- **Interventions**: one row per run and intervention: the types it targets, ``n`` (items asked
  under it), accuracy under it, the paired change (intervened - published, percentage points) with
  its 95% interval, the exact McNemar p, the flip rate, the targeted contrast with its interval and
  its two groups' sizes; the gold option's probability change (logprob runs) and CGLA_acc under it
  with its change (runs with ``cgla``), as columns only when some run has them;
- **Change per type**: the paired change per spurious type with its interval, one row per run and
  intervention; the items per type in the header when every row has the same, else in each cell;
- **Counterfactual gaps**: the twin's ``cue-aligned`` and ``cue-removed`` minus the published item
  (``cue-broken``) per type, when a run holds ``counterfactual_gaps``.

A figure that is missing or malformed (a hand-edited file) shows as a dash, never as a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mmspubench.dataset_builder.schema import SPURIOUS_TYPES
from mmspubench.eval.intervention_names import CF_PREFIX
from mmspubench.eval.views.confounds.cells import fixed, interval
from mmspubench.eval.views.interventions.record import GAPS

DASH = "—"
ABBREVS = tuple(t.abbrev for t in SPURIOUS_TYPES)
GAP_ROWS = tuple((key, name, f"{name[len(CF_PREFIX) :]} - cue-broken") for name, key in GAPS.items())
"""Rows of the counterfactual gaps table, in order: (results.json key, its counterfactual, row label)."""
Cell = Callable[[str], str]
Row = tuple[str, str, Mapping[str, Any]]
"""(model cell, intervention name, its figures) of one table row."""


def _map(obj: Any, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _num(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else DASH


def _fixed(value: Any, digits: int = 2, signed: bool = False) -> str:
    number = _num(value)
    if number is None:
        return DASH
    return fixed(number, digits, signed)


def _with_ci(value: Any, ci: Any, digits: int = 2) -> str:
    """``+1.23 [-4.00, +5.67]``; the value alone when the interval is malformed; a dash without it."""
    text = _fixed(value, digits, signed=True)
    if text == DASH:
        return DASH
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_num(v) is not None for v in ci):
        return f"{text} {interval((float(ci[0]), float(ci[1])), digits)}"
    return text


def _p(value: Any) -> str:
    number = _num(value)
    if number is None:
        return DASH
    return f"{number:.3g}" if number >= 0.001 else f"{number:.1e}"


def rows(runs: Sequence[Mapping[str, Any]], model: Callable[[Mapping[str, Any]], str]) -> list[Row]:
    """(model cell, intervention, figures) of every run's interventions, in the runs' order."""
    out = []
    for run in runs:
        by_name = _map(_map(run, "interventions"), "by_intervention")
        for name, figures in by_name.items():
            if isinstance(figures, Mapping):
                out.append((model(run), str(name), figures))
    return out


def _targets(figures: Mapping[str, Any]) -> str:
    targets = figures.get("targets")
    if not isinstance(targets, list) or not targets:
        return DASH
    return ", ".join(str(t) for t in targets)


def _contrast(figures: Mapping[str, Any]) -> list[str]:
    contrast = _map(figures, "targeted_contrast")
    if not contrast:
        return [DASH, DASH]
    sizes = f"{_count(contrast.get('n_targeted'))}/{_count(contrast.get('n_other'))}"
    return [_with_ci(contrast.get("value"), contrast.get("ci95")), sizes]


def _main_cells(figures: Mapping[str, Any], gold: bool, cgla: bool) -> list[str]:
    change = _map(figures, "change")
    cells = [
        _count(figures.get("n")),
        _fixed(_map(figures, "accuracy").get("overall")),
        _with_ci(change.get("gain"), change.get("ci95")),
        _p(change.get("mcnemar_p")),
        _fixed(figures.get("flip_rate")),
        *_contrast(figures),
    ]
    if gold:
        prob = _map(figures, "gold_prob_change")
        cells.append(_with_ci(prob.get("mean"), prob.get("ci95"), 4) if prob else DASH)
    if cgla:
        section = _map(figures, "cgla")
        cells += [_fixed(section.get("acc")), _with_ci(section.get("change"), section.get("ci95"))]
    return cells


def _table(header: Sequence[str], body: Sequence[Sequence[str]], left: int) -> list[str]:
    rule = "|" + "|".join(["---"] * left + ["---:"] * (len(header) - left)) + "|"
    return ["| " + " | ".join(header) + " |", rule, *("| " + " | ".join(row) + " |" for row in body)]


def _main_table(found: Sequence[Row], cell: Cell) -> list[str]:
    gold = any(_map(f, "gold_prob_change") for _, _, f in found)
    cgla = any(_map(f, "cgla") for _, _, f in found)
    header = ["Model", "Intervention", "Targets", "n", "Accuracy", "Change [95% CI]", "McNemar p"]
    header += ["Flip rate", "Targeted contrast [95% CI]", "n targeted/other"]
    header += ["Gold prob. change [95% CI]"] * gold + ["CGLA_acc", "CGLA_acc change [95% CI]"] * cgla
    body = [[m, cell(name), cell(_targets(f)), *_main_cells(f, gold, cgla)] for m, name, f in found]
    title = (
        "Interventions (each item asked again with its image changed; change: intervened - published "
        "accuracy, percentage points, paired bootstrap 95% CI; p: exact McNemar, two-sided; flip rate: "
        "% of answers that change; targeted contrast: change on the targeted types' items - change on "
        "the others"
        + ("; gold prob.: mean change of the gold option's probability, 0-1" if gold else "")
        + ")"
    )
    return [title, "", *_table(header, body, 3)]


def _type_counts(figures: Mapping[str, Any]) -> tuple[str, ...]:
    accuracy = _map(figures, "accuracy")
    by_type = _map(accuracy, "n_by_type")
    return (*(_count(by_type.get(t, 0 if by_type else None)) for t in ABBREVS), _count(accuracy.get("n")))


def _per_type_table(
    title: str, second: str, labelled: Sequence[tuple[str, str, Mapping[str, Any], Any]]
) -> list[str]:
    """(model, row label, change section, items per type) rows; the n in the header when all agree."""
    counts = {tuple(n) for *_, n in labelled}
    shared = counts.pop() if len(counts) == 1 else None
    groups = [*ABBREVS, "Overall"]
    header = ["Model", second] + (
        [g if k == DASH else f"{g} (n={k})" for g, k in zip(groups, shared, strict=True)]
        if shared
        else groups
    )
    body = []
    for model, label, change, n in labelled:
        by_type, ci = _map(change, "by_type"), _map(change, "ci95_by_type")
        values = [_with_ci(by_type.get(t), ci.get(t)) for t in ABBREVS]
        values.append(_with_ci(change.get("gain"), change.get("ci95")))
        if shared is None:
            values = [v if DASH in (v, k) else f"{v} (n={k})" for v, k in zip(values, n, strict=True)]
        body.append([model, label, *values])
    return [title, "", *_table(header, body, 2)]


def tables(
    runs: Sequence[Mapping[str, Any]], model: Callable[[Mapping[str, Any]], str], cell: Cell
) -> list[str]:
    """The interventions tables' lines (each table after a blank line); none without the section."""
    found = rows(runs, model)
    if not found:
        return []
    change_rows = [(m, cell(name), _map(f, "change"), _type_counts(f)) for m, name, f in found]
    title = "Change per type under each intervention (intervened - published, percentage points [95% CI])"
    lines = ["", *_main_table(found, cell), "", *_per_type_table(title, "Intervention", change_rows)]
    gaps = []
    for run in runs:
        section = _map(run, "interventions")
        by_name = _map(section, "by_intervention")
        for key, name, label in GAP_ROWS:
            change = _map(_map(section, "counterfactual_gaps"), key)
            if change:
                gaps.append((model(run), label, change, _type_counts(_map(by_name, name))))
    if gaps:
        title = (
            "Counterfactual gaps per type (the twin's re-rendered items minus the published ones, "
            "percentage points [95% CI])"
        )
        lines += ["", *_per_type_table(title, "Gap", gaps)]
    return lines
