"""Odd result folders the leaderboard meets: missing and impossible figures, a 300-character model
id, two dataset revisions, no runs at all, more runs than a chart can draw."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pytest
from mmspubench.space import handlers, hub_leaderboard
from mmspubench.space.leaderboard import TYPE_COLUMNS, load_entries, view_frame

from .fixtures import results_json, write_run


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _board(root: Path) -> tuple[Any, str]:
    frame, note = hub_leaderboard.board(root, load_entries(root), "mmbench/MM-SpuBench")
    return frame, html.unescape(note)


def _full(model: str, value: float = 30.0) -> dict[str, Any]:
    return results_json(model, dict.fromkeys(TYPE_COLUMNS, value), value, 20.0, 10)


def test_missing_figures_are_empty_cells_and_rank_last(tmp_path: Path) -> None:
    gaps = _full("org/gaps", 90.0)
    gaps["accuracy"]["by_type"]["CO"], gaps["accuracy"]["average"], gaps["cgla"] = None, None, {"acc": None}
    gaps["dataset"]["n"] = "ten"  # an edited file: no count (it stopped the Space with a ValueError)
    write_run(tmp_path, "gaps", gaps)
    write_run(tmp_path, "ok", _full("org/ok"))
    frame, _ = _board(tmp_path)
    assert list(frame["Run"]) == ["ok", "gaps"] and frame.loc[1, "n"] == 0
    assert (
        math.isnan(frame.loc[1, "CO"]) and math.isnan(frame.loc[1, "Average"]) and frame.loc[1, "BG"] == 90.0
    )


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("overall", math.inf, "value inf is not a finite number"),
        ("overall", -5.0, "value -5.0 is outside [0, 100]"),
        ("by_type", {"CO": 1e308}, "is outside [0, 100]"),
    ],
)
def test_an_impossible_figure_leaves_the_run_out_with_its_field(
    tmp_path: Path, field: str, value: Any, said: str
) -> None:
    bad = _full("org/bad")
    bad["accuracy"][field] = value
    write_run(tmp_path, "bad", bad)  # no samples.jsonl: its figures were shown unchecked (-5.00, inf)
    write_run(tmp_path, "ok", _full("org/ok"))
    frame, note = _board(tmp_path)
    assert list(frame["Run"]) == ["ok"]
    assert (
        f"run bad left out: {tmp_path / 'bad' / 'results.json'}: field 'accuracy.{field}" in note
        and said in note
    )


def test_a_300_character_model_id_wraps_in_the_legend(tmp_path: Path) -> None:
    write_run(tmp_path, "long", _full("org/" + "x" * 296))
    write_run(tmp_path, "short", _full("org/y", 40.0))
    state = handlers.load_state(handlers.SpaceConfig(results=str(tmp_path), hub_models=()))
    assert all(len(line) <= 72 for s in state.series for line in s.label.splitlines())
    assert "".join(state.series[1].label.split()) == "org/" + "x" * 296
    pytest.importorskip("matplotlib")
    figure = handlers.leaderboard_plot(state)
    assert figure.get_size_inches()[0] <= 12.5  # was 34 inches wide: bars too small to read


def test_runs_on_two_dataset_revisions_say_so(tmp_path: Path) -> None:
    old, new = _full("org/m"), _full("org/m", 60.0)
    new["dataset"]["revision"], new["created_at"] = "ffff0000ffff0000", "2026-12-01T00:00:00+00:00"
    write_run(tmp_path, "v1", old)
    write_run(tmp_path, "v2", new)
    write_run(tmp_path, "other", _full("org/other"))
    frame, note = _board(tmp_path)
    assert sorted(frame["Run"]) == ["other", "v2"]
    assert "run v1 not shown: run v2 is a later run of the same model" in note
    assert "(on dataset revision ffff0000ffff; the replaced run on abc123def456)" in note
    assert "the runs shown are on 2 dataset revisions (abc123def456, ffff0000ffff)" in note


def test_an_empty_results_folder_says_so_and_the_page_builds(tmp_path: Path) -> None:
    from mmspubench.space.board_widths import column_widths
    from mmspubench.space.layout import build_app

    state = handlers.load_state(handlers.SpaceConfig(results=str(tmp_path), hub_models=()))
    assert len(state.board) == 0 and state.series == () and handlers.leaderboard_plot(state) is None
    assert "holds no results.json" in html.unescape(state.board_note)
    shown = view_frame(state.board)
    assert len(column_widths(list(shown.columns), shown)) == len(shown.columns)
    build_app(state=state)


def test_the_chart_draws_the_first_runs_of_a_long_table_and_says_so(tmp_path: Path) -> None:
    from mmspubench.space.leaderboard import CHART_RUNS

    for k in range(CHART_RUNS + 3):
        write_run(tmp_path, f"run{k:02d}", _full(f"org/model-{k}", 10.0 + k))
    state = handlers.load_state(handlers.SpaceConfig(results=str(tmp_path), hub_models=()))
    assert len(state.board) == CHART_RUNS + 3 and len(state.series) == CHART_RUNS
    assert [s.label for s in state.series][:2] == [
        f"org/model-{CHART_RUNS + 2}",
        f"org/model-{CHART_RUNS + 1}",
    ]
    said = f"the chart draws the table's first {CHART_RUNS} of its {CHART_RUNS + 3} runs"
    assert said in html.unescape(state.board_note)
