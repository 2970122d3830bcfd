"""Which results runs Explore's "CGL from" offers, how it names them, and why it leaves a run out.

Plain functions of the leaderboard's table and the runs' samples files: a run is offered when it
has a samples.jsonl and recorded CGLA (an accuracy-only run has no condition to chart), or when it
is a generate-mode run the table marks ``thinking`` (:mod:`mmspubench.space.replies`): one without
CGLA is offered for its replies, each with its reasoning folded under it, labelled
:data:`REPLIES_ONLY`, and the CGL panel says why it draws no chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from mmspubench.markup import escape_cell
from mmspubench.space import leaderboard
from mmspubench.space.replies import THINKING


def _variant_rank(variant: str) -> int:
    return 0 if variant == "standard" else 2 if "ceiling" in variant else 1


REPLIES_ONLY = "(replies only)"
"""How "CGL from" labels a thinking run without CGLA, offered for its replies."""


def _replies_only(row: pd.Series) -> bool:
    """A generate-mode table run without CGLA that the table marks ``thinking``."""
    marks = str(row.get("Mode", "")).split(", ")
    return _without_cgla(row) and marks[0].startswith("generate") and THINKING in marks[1:]


def _without_cgla(row: pd.Series) -> bool:
    """A table run that recorded no CGLA (``eval --metrics accuracy``, an API without log-probabilities)."""
    value = row.get("CGLA_acc")
    return (
        "(accuracy only)" in str(row.get("Mode", "")) or not isinstance(value, (int, float)) or value != value
    )


def cgla_choices(board: pd.DataFrame, runs: dict[str, Path]) -> tuple[tuple[str, str], ...]:
    """(label, run) of each table run with samples and CGLA (or a thinking run's replies): labelled
    by model and prompt variant (the run folder added where two share both; :data:`REPLIES_ONLY`
    after a run offered for its replies), standard runs first and ceiling runs last, a run with CGLA
    before one offered for its replies (the first is the default)."""
    rows = [
        (str(r["Run"]), leaderboard.plain_model(str(r["Model"])), _variant_label(r))
        for _, r in board.iterrows()
        if not _without_cgla(r) or _replies_only(r)
    ]
    rows = [row for row in rows if row[0] in runs]
    labels = [f"{model} · {variant}" for _, model, variant in rows]
    choices = [
        (
            f"{label} (run {run})" if labels.count(label) > 1 else label,
            run,
            (_variant_rank(variant), variant.endswith(REPLIES_ONLY)),
        )
        for label, (run, _, variant) in zip(labels, rows, strict=True)
    ]
    return tuple((label, run) for label, run, _ in sorted(choices, key=lambda c: (c[2], c[0])))


def _variant_label(row: pd.Series) -> str:
    variant = str(row["Variant"])
    return f"{variant} {REPLIES_ONLY}" if _replies_only(row) else variant


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
        if _without_cgla(row) and not _replies_only(row):
            left.append((name, "no CGLA recorded (an accuracy-only run, `eval --metrics accuracy`)"))
        elif run not in runs:
            left.append((name, "no samples.jsonl beside its results.json"))
    if not left:
        return ""
    # The run's names are a run's text (escaped); the reasons are the page's own.
    lines = "\n".join(f"- {escape_cell(name)}: {reason}" for name, reason in left)
    return f"Not offered in **CGL from** (the CGLA of an item comes from a run's samples):\n\n{lines}"
