"""``mmspubench report``: results.json files -> a Markdown table in the layout of the paper's Table 2.

One row per run: the model, the accuracy per spurious type (BG ... Sha.), ``Average`` (the mean of
the per-type accuracies, as in the paper's Table 2), ``Overall`` (share of all items, each item
counted once) and ``CGLA_acc``. Percentages with two decimals; ``—`` where a figure was not
computed (a type without items, a metric not run). When the runs record their continuation scorer
(``model.scorer_used``), a ``Scorer`` column shows it, and a note under the table gives the reason
of every fast-to-plain fallback (``model.scorer_fallback_reason``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.hub import display_name
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES
from mmspubench.eval.results import RESULTS_NAME, read_results

DASH = "—"
ACCURACY_ONLY = "acc. only"
"""CGLA_acc cell of an accuracy-only run (e.g. an API that returns no prompt log-probabilities)."""
HEADER = ["Model", *(t.abbrev for t in SPURIOUS_TYPES), "Average", "Overall", "CGLA_acc"]


def _pct(value: Any) -> str:
    return DASH if value is None else f"{float(value):.2f}"


def printable(text: str) -> str:
    """``text`` with every non-printable character (ESC, NUL, newline, zero-width...) escaped, so a
    results.json cannot drive the terminal or break a table row."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _model_name(results: Mapping[str, Any]) -> str:
    model = results.get("model") or {}
    # A local folder reads better by its last component; Hub ids keep their org/name form.
    return printable(display_name(str(model.get("id") or model.get("path") or "?"))).replace("|", "\\|")


def table_row(results: Mapping[str, Any]) -> list[str]:
    """The cells of one run's row."""
    accuracy = results.get("accuracy") or {}
    by_type = accuracy.get("by_type") or {}
    cgla = results.get("cgla") or {}
    return [
        _model_name(results),
        *(_pct(by_type.get(t.abbrev)) for t in SPURIOUS_TYPES),
        _pct(accuracy.get("average")),
        _pct(accuracy.get("overall")),
        ACCURACY_ONLY if results.get("accuracy_only") and not cgla else _pct(cgla.get("acc")),
    ]


def _scorer(results: Mapping[str, Any]) -> tuple[str, str | None]:
    model = results.get("model") or {}
    reason = model.get("scorer_fallback_reason")
    return printable(str(model.get("scorer_used") or DASH)), None if reason is None else printable(
        str(reason)
    )


def markdown_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown table for several runs, one row each, in the given order."""
    with_scorer = any((run.get("model") or {}).get("scorer_used") for run in runs)
    header = [*HEADER, "Scorer"] if with_scorer else HEADER
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    notes = []
    for run in runs:
        cells = table_row(run)
        if with_scorer:
            used, reason = _scorer(run)
            cells.append(used + ("*" if reason else ""))
            if reason:
                notes.append(f"\\* {cells[0]}: the fast scorer was asked for, the plain one ran ({reason})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + (["", *notes] if notes else []))


def load_for_report(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Read results.json files (a run folder stands for its results.json)."""
    out = []
    for raw in paths:
        path = Path(raw)
        out.append(read_results(path / RESULTS_NAME if path.is_dir() else path))
    return out
