"""The leaderboard's rank interval column and its note of tied groups, from the runs' samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mmspubench.eval.analysis.stats import rank_intervals
from mmspubench.space import rank_column
from mmspubench.space.leaderboard import ALL_COLUMNS, RANK, leaderboard_frame, load_entries, view_frame

from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("relative_size",))


def _folder(tmp_path: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(3)
    right = rng.random((3, 60)) < np.array([[0.95], [0.5], [0.5]])
    for name, row in zip(("best", "mid1", "mid2"), right, strict=True):
        items = [Item(f"{i:03d}", TYPES[i % 3], bool(v)) for i, v in enumerate(row)]
        write_run(tmp_path / "results" / name, items, model=f"org/{name}")
    return tmp_path / "results", right


def test_the_column_holds_each_runs_rank_interval(tmp_path: Path) -> None:
    folder, right = _folder(tmp_path)
    board = leaderboard_frame(load_entries(folder))
    cells, note = rank_column.rank_cells(folder, board)
    expected = rank_intervals(["best", "mid1", "mid2"], right.astype(float), seed=0)
    assert cells == {r.name: r.label() for r in expected}
    assert cells["best"] == "1 [1, 1]"
    # the note is escaped Markdown: the tied runs by model and run name
    assert "tied &#40;overlapping intervals&#41;&#58; org/mid" in note
    assert "&#40;mid1&#41;" in note and "&#40;mid2&#41;" in note
    assert RANK in ALL_COLUMNS and RANK in view_frame(board, columns=[RANK]).columns


def test_runs_without_samples_or_alone_get_no_rank(tmp_path: Path) -> None:
    folder, _ = _folder(tmp_path)
    for name in ("mid1", "mid2"):
        (folder / name / "samples.jsonl").unlink()
    board = leaderboard_frame(load_entries(folder))
    assert rank_column.rank_cells(folder, board) == ({}, "")
    assert list(view_frame(board, columns=[RANK])[RANK]) == ["", "", ""]  # the column is there, empty


def test_the_space_fills_the_column_and_notes_the_ties(tmp_path: Path) -> None:
    from mmspubench.space.results_runs import load_runs

    folder, _ = _folder(tmp_path)
    runs = load_runs(str(folder), None, None)
    ranks = dict(zip(runs.board["Run"], runs.board[RANK], strict=True))
    assert ranks["best"] == "1 [1, 1]" and ranks["mid1"].endswith("[2, 3]")
    assert "Rank &#91;95% CI&#93; &#40;in Columns&#41;" in runs.note
