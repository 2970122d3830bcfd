"""The Space's runs, loaded once at start-up: the leaderboard, its chart, and the runs Explore reads.

Only the runs made on the dataset the Space explores are shown (:mod:`mmspubench.space.run_match`);
the others are left out of the table, the chart and Explore, and the notes under the table and
under "CGL from" say why. A run whose record holds nothing to match it with is shown, and the note
says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from mmspubench.markup import escape_cell
from mmspubench.space import hub_leaderboard, leaderboard, rank_column, run_match

if TYPE_CHECKING:
    from mmspubench.eval.analysis.plot_data import Series
    from mmspubench.eval.results_file import Results

NAMED_RUNS = 5
"""Runs a note names before it counts the rest."""


@dataclass(frozen=True, slots=True)
class Runs:
    """What the Space shows of a results folder."""

    board: pd.DataFrame
    """The leaderboard table (all columns)."""
    note: str
    """The note under it (Markdown, escaped)."""
    samples: dict[str, Path] = field(default_factory=dict)
    """Run name -> samples.jsonl of the table's runs, for Explore."""
    series: tuple[Series, ...] = ()
    """The chart's bars: the table's first ``leaderboard.CHART_RUNS`` runs."""
    apart: dict[str, str] = field(default_factory=dict)
    """Run name -> why it is not shown: made on another dataset than the one explored."""


def _results(folder: Path, run: str) -> Results:
    from mmspubench.eval.results_file import read_results_file

    return read_results_file(folder / run / "results.json")


def _named(runs: list[str]) -> str:
    more = f" and {len(runs) - NAMED_RUNS} more" if len(runs) > NAMED_RUNS else ""
    return ", ".join(runs[:NAMED_RUNS]) + more


def load_runs(results: str | None, dataset: str | None, explored: Mapping[str, Any] | None) -> Runs:
    """The runs of ``results`` (a folder or Hub dataset; ``None``: none) as the Space shows them
    beside the dataset ``dataset`` (its Hub id or folder, ``None`` the bundled release), whose
    identity as a run records it is ``explored``."""
    folder = leaderboard.resolve_results(results) if results is not None else None
    entries = leaderboard.load_entries(folder) if folder is not None else []
    board, note = hub_leaderboard.board(
        folder, entries, hub_leaderboard.benchmark_id(dataset), explored=explored
    )
    if folder is None:
        return Runs(board, note)
    notes = [note] if note else []
    cells, ranked = rank_column.rank_cells(folder, board)
    board = board.assign(**{leaderboard.RANK: board["Run"].map(lambda run: cells.get(run, ""))})
    notes += [ranked] if ranked else []
    # The chart and Explore show the table's runs, in the table's order (the chart its first
    # CHART_RUNS, and the note says so).
    by_run = {str(e.row["Run"]): e for e in entries}
    shown = [by_run[run] for run in leaderboard.board_runs(board)]
    series = leaderboard.plot_series(folder, shown[: leaderboard.CHART_RUNS])
    if len(shown) > leaderboard.CHART_RUNS:
        said = f"the chart draws the table's first {leaderboard.CHART_RUNS} of its {len(shown)} runs (best Average first)"
        notes.append(f"- {escape_cell(said)}")
    names = [str(e.row["Run"]) for e in shown]
    unknown = [run for run in names if run_match.unmatched(_results(folder, run), explored)]
    if unknown:
        said = (
            f"runs {_named(unknown)}: their results.json records no dataset content hash or Hub revision "
            "to match with the dataset explored; Explore shows a record of theirs under an item only "
            "when it is that item's (answer, class name and types)"
        )
        notes.append(f"- {escape_cell(said)}")
    apart = {}
    for entry in entries:
        run = str(entry.row["Run"])
        fault = None if run in names else run_match.dataset_fault(_results(folder, run), explored)
        if fault:
            apart[run] = fault
    samples = {
        run: folder / run / "samples.jsonl" for run in names if (folder / run / "samples.jsonl").is_file()
    }
    return Runs(board, "\n".join(notes), samples, series, apart)
