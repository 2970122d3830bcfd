"""The leaderboard's rank interval column and the note naming its tied groups.

The full runs of the table that hold their samples.jsonl and the same items (the largest such set)
are ranked by overall accuracy with 95% rank intervals, recomputed from their samples at start-up
(:mod:`mmspubench.eval.analysis.stats.ranks`: a paired bootstrap over the items, every run
resampled with the same items, seed 0). The table keeps its sort; the column shows each run's rank
``2 [1, 3]`` (offered in the column chooser: the default columns fill the table's width) and the
note under the table the runs whose intervals overlap. A partial run, a run
without samples, or one on other items gets an empty cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from mmspubench.eval.records import SampleResult
from mmspubench.markup import escape_cell
from mmspubench.space.leaderboard import PARTIAL, RANK, plain_model


def _samples(folder: Path, runs: Sequence[str]) -> dict[str, list[SampleResult]]:
    from mmspubench.eval.results import RESULTS_NAME, SAMPLES_NAME, read_finished_samples, read_results
    from mmspubench.eval.run_stamp import check_samples_beside

    out = {}
    for run in runs:
        path = folder / run / SAMPLES_NAME
        if path.is_file():
            samples = read_finished_samples(path)
            check_samples_beside(path, read_results(folder / run / RESULTS_NAME), folder / run / RESULTS_NAME)
            out[run] = samples
    return out


def rank_cells(folder: Path, board: pd.DataFrame) -> tuple[dict[str, str], str]:
    """Run name -> its rank cell, and the note (Markdown, escaped; empty when fewer than two runs rank)."""
    from mmspubench.eval.analysis.stats import rank_intervals, tied_groups
    from mmspubench.eval.analysis.stats.tables import SEED, outcomes

    full = [
        str(run)
        for run, partial in zip(board["Run"], board[PARTIAL], strict=True)
        if isinstance(run, str) and run and not partial
    ]
    read = _samples(folder, full)
    by_items: dict[tuple[str, ...], list[str]] = {}
    for run, samples in read.items():
        by_items.setdefault(tuple(sorted(s.id for s in samples)), []).append(run)
    chosen = max(by_items.values(), key=len, default=[])
    found = outcomes(chosen, [read[run] for run in chosen]) if len(chosen) > 1 else None
    if found is None:
        return {}, ""
    intervals = rank_intervals(chosen, found.right, SEED)
    models = dict(zip(board["Run"], board["Model"].map(plain_model), strict=True))
    groups = [" = ".join(f"{models[run]} ({run})" for run in g) for g in tied_groups(intervals) if len(g) > 1]
    said = (
        f"{RANK} (in Columns): rank by overall accuracy among the {len(chosen)} full runs on the same "
        f"{found.right.shape[1]} items, with its 95% interval (paired bootstrap over the items); "
        f"tied (overlapping intervals): {'; '.join(groups) if groups else 'none'}"
    )
    return {r.name: r.label() for r in intervals}, f"- {escape_cell(said)}"
