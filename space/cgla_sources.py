"""Which results runs Explore's "CGL from" offers, how it names them, and why it leaves a run out.

Plain functions of the leaderboard's table and the runs' samples files: a run is offered when it
has a samples.jsonl and recorded CGLA (an accuracy-only run has no condition to chart).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from mmspubench.markup import escape_cell
from mmspubench.space import leaderboard


def _variant_rank(variant: str) -> int:
    return 0 if variant == "standard" else 2 if "ceiling" in variant else 1


def _without_cgla(row: pd.Series) -> bool:
    """A table run that recorded no CGLA (``eval --metrics accuracy``, an API without log-probabilities)."""
    value = row.get("CGLA_acc")
    return (
        "(accuracy only)" in str(row.get("Mode", "")) or not isinstance(value, (int, float)) or value != value
    )


def cgla_choices(board: pd.DataFrame, runs: dict[str, Path]) -> tuple[tuple[str, str], ...]:
    """(label, run) of each table run with samples and CGLA: labelled by model and prompt variant
    (the run folder added where two share both), standard runs first and ceiling runs last."""
    rows = [
        (str(r["Run"]), leaderboard.plain_model(str(r["Model"])), str(r["Variant"]))
        for _, r in board.iterrows()
        if not _without_cgla(r)
    ]
    rows = [row for row in rows if row[0] in runs]
    labels = [f"{model} · {variant}" for _, model, variant in rows]
    choices = [
        (f"{label} (run {run})" if labels.count(label) > 1 else label, run, _variant_rank(variant))
        for label, (run, _, variant) in zip(labels, rows, strict=True)
    ]
    return tuple((label, run) for label, run, _ in sorted(choices, key=lambda c: (c[2], c[0])))


def cgla_note(board: pd.DataFrame, runs: dict[str, Path], apart: Mapping[str, str] | None = None) -> str:
    """Which table runs "CGL from" does not offer and why (no CGLA recorded, no samples.jsonl), and
    the runs of the results folder left out of the table as made on another dataset (``apart``:
    run -> why), as the page says it under the dropdown; empty when it offers every run."""
    # A dataset's name in the reason is a run's text: escaped, as the run's name is below.
    left = [(f"run {run}", escape_cell(why)) for run, why in (apart or {}).items()]
    for _, row in board.iterrows():
        run = str(row["Run"])
        if not run:
            continue  # a Hub leaderboard row: no run to read
        name = f"{leaderboard.plain_model(str(row['Model']))} · {row['Variant']} (run {run})"
        if _without_cgla(row):
            left.append((name, "no CGLA recorded (an accuracy-only run, `eval --metrics accuracy`)"))
        elif run not in runs:
            left.append((name, "no samples.jsonl beside its results.json"))
    if not left:
        return ""
    # The run's names are a run's text (escaped); the reasons are the page's own.
    lines = "\n".join(f"- {escape_cell(name)}: {reason}" for name, reason in left)
    return f"Not offered in **CGL from** (the CGLA of an item comes from a run's samples):\n\n{lines}"
