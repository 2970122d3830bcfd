"""A run is shown only beside the items and the runs it was made on: the Space started with one
release and runs of another shows none of their answers or CGLA under its items, its leaderboard
never ranks runs of two releases side by side, and a samples.jsonl another run wrote is never read
under a run's name; the page says why each run is left out."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import pandas as pd
import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space import explore, handlers, preview
from mmspubench.space.handlers import LIVE_SOURCE, SpaceConfig, SpaceState
from mmspubench.space.leaderboard import FRAME_COLUMNS

from .fixtures import make_dataset
from .release_runs import write_release, write_run_on


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    """Release ``a`` (item 000000 a dog, answer B) and release ``b`` (the same id a kite, answer C)."""
    return write_release(tmp_path / "release-a"), write_release(tmp_path / "release-b", kite=True)


def _state(dataset: Path, runs: Path) -> SpaceState:
    return handlers.load_state(SpaceConfig(dataset=str(dataset), results=str(runs), hub_models=()))


def test_explore_shows_nothing_of_a_run_made_on_another_release(
    releases: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = releases
    write_run_on(tmp_path / "runs", "on-b", b)
    state = _state(a, tmp_path / "runs")
    assert [run for _, run in handlers.cgla_sources(state)] == [LIVE_SOURCE]
    frame, text, record = preview.results_cgla(state, "000000", LIVE_SOURCE)
    assert frame.empty and record is None and "kite" not in text  # was: "Class name scored: kite"
    gallery, reading = preview.show_interventions(state, "000000", LIVE_SOURCE)
    assert [caption for _, caption in gallery] == ["published"]  # was: "published: C (right)"
    assert "From results run" not in reading
    with pytest.raises(MMSpuBenchError, match="unknown results run"):
        handlers.show_cgla(state, "000000", "on-b", None)
    # The page says why: under "CGL from" and under the leaderboard.
    for note in (html.unescape(state.cgla_note), html.unescape(state.board_note)):
        assert "on-b" in note and "made on another dataset" in note and "content hash" in note, note


def test_the_leaderboard_never_ranks_runs_of_two_releases_side_by_side(
    releases: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = releases
    write_run_on(tmp_path / "runs", "on-a", a, model="org/x")
    write_run_on(tmp_path / "runs", "on-b", b, model="org/y")
    for explored, shown, left in ((a, "on-a", "on-b"), (b, "on-b", "on-a")):
        state = _state(explored, tmp_path / "runs")
        assert list(state.board["Run"]) == [shown] and [s.label for s in state.series] == [
            "org/x" if shown == "on-a" else "org/y"
        ]
        note = html.unescape(state.board_note)
        assert f"run {left} left out: made on another dataset" in note and f"run {shown}" not in note


def _mixed(tmp_path: Path, release: Path) -> Path:
    """``mixed``: run x's results.json beside run y's samples.jsonl (the same answers, another model:
    every figure recomputes equal, only the stamps tell)."""
    x = write_run_on(tmp_path / "made", "x", release, model="org/x")
    y = write_run_on(tmp_path / "made", "y", release, model="org/y")
    mixed = tmp_path / "runs" / "mixed"
    mixed.mkdir(parents=True)
    shutil.copy(x / "results.json", mixed / "results.json")
    shutil.copy(y / "samples.jsonl", mixed / "samples.jsonl")
    return mixed


def test_another_runs_samples_are_never_read_under_a_runs_name(
    releases: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = releases
    mixed = _mixed(tmp_path, a)
    write_run_on(tmp_path / "runs", "own", a, model="org/z")
    state = _state(a, tmp_path / "runs")
    assert list(state.board["Run"]) == ["own"] and "mixed" not in state.runs
    note = html.unescape(state.board_note)
    assert f"run mixed left out: {mixed / 'samples.jsonl'}: line 1: record '000000': field 'run'" in note
    # A state that holds the run all the same (as a hand-made one may) refuses to read it.
    dataset = make_dataset()
    held = SpaceState(
        dataset=dataset,
        dataset_label="a",
        index=explore.build_index(dataset),
        board=pd.DataFrame(columns=list(FRAME_COLUMNS)),
        runs={"mixed": mixed / "samples.jsonl"},
    )
    with pytest.raises(MMSpuBenchError, match="field 'run'"):
        handlers.show_cgla(held, "000000", "mixed", None)
    frame, _, record = preview.results_cgla(held, "000000", "mixed")
    assert frame.empty and record is None


def test_a_record_of_another_item_under_the_same_id_is_not_shown(
    releases: tuple[Path, Path], tmp_path: Path
) -> None:
    """Where the run's dataset cannot be matched (a hand-made state knows no content hash), the
    record itself must be the item's: its answer, class name and types."""
    _, b = releases
    run = write_run_on(tmp_path / "runs", "on-b", b)
    dataset = make_dataset()  # release a's items
    held = SpaceState(
        dataset=dataset,
        dataset_label="a",
        index=explore.build_index(dataset),
        board=pd.DataFrame(columns=list(FRAME_COLUMNS)),
        runs={"on-b": run / "samples.jsonl"},
    )
    with pytest.raises(MMSpuBenchError, match=r"record of item '000000' is not this item.*answer 'C'.*'B'"):
        handlers.show_cgla(held, "000000", "on-b", None)
    frame, text, record = preview.results_cgla(held, "000000", "on-b")
    assert frame.empty and record is None and "kite" not in text
    gallery, _ = preview.show_interventions(held, "000000", "on-b")
    assert [caption for _, caption in gallery] == ["published"]
    frame, text, record = preview.results_cgla(held, "000001", "on-b")  # the same item in both: shown
    assert not frame.empty and record is not None and record["class_name"] == "cup"
