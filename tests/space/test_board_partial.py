"""A partial run (``eval --limit``) is marked and kept apart; runs differing in answer mode say so by default."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mmspubench.dataset_builder.split_ids import split_identity
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import SampleResult
from mmspubench.space import handlers, hub_leaderboard
from mmspubench.space.leaderboard import DEFAULT_COLUMNS, load_entries, view_frame

from tests.eval.submit.test_submit import DATASET, REVISION, _sample
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

WHOLE = [f"{i:06d}" for i in range(20)]


def write_run(
    root: Path, name: str, picks: Sequence[int], created: str, model: str = "org/m", **config_kw: Any
) -> Path:
    """A consistent run of the items ``picks`` of a 20-item split, created at ``created``: a
    ``--limit`` run when fewer than 20 (``dataset.split_n`` is the whole split's, as eval records it)."""
    samples = [_sample(i) for i in picks]
    if config_kw.get("answer_mode") == "logprob":  # every item answered: the argmax of its scores
        samples = [_scored(s) for s in samples]
    if "cgla" not in config_kw.get("metrics", ("cgla",)):  # an accuracy-only run records no conditions
        samples = [replace(s, conditions=(), cgla_min=None, cgla_acc=None) for s in samples]
    limit = None if len(picks) == len(WHOLE) else len(picks)
    config = RunConfig(model=model, dataset=DATASET, prompts=prompt_spec(), limit=limit, **config_kw)
    info = {"id": DATASET, "revision": REVISION, **split_identity(WHOLE)}
    return write_run_folder(root / name, config, samples, info, model_identity(model), created=created)


def _scored(sample: SampleResult) -> SampleResult:
    letter = sample.prediction or "C"
    scores = tuple(-1.0 if x == letter else -3.0 for x in "ABCD")
    return replace(sample, prediction=letter, correct=letter == sample.answer, option_scores=scores)


def _board(root: Path) -> tuple[Any, str]:
    frame, note = hub_leaderboard.board(root, load_entries(root), DATASET)
    return frame, html.unescape(note)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_limit_run_never_replaces_or_outranks_the_full_run(tmp_path: Path) -> None:
    write_run(tmp_path, "full", range(20), "2026-01-01T00:00:00+00:00")
    # Two items the model gets right, run later: today it replaced the full run and ranked first.
    write_run(tmp_path, "quick", [2, 4], "2026-02-01T00:00:00+00:00")
    frame, note = _board(tmp_path)
    assert list(frame["Run"]) == ["full", "quick"], note
    assert frame.loc[1, "Average"] > frame.loc[0, "Average"]  # better figures, ranked after all the same
    assert frame.loc[1, "Mode"] == "generate, partial (n=2 of 20)" and frame.loc[0, "Mode"] == "generate"
    assert "not shown" not in note
    for ascending in (True, False):
        for by in ("Average", "Overall", "CGLA_acc", "n"):
            shown = view_frame(frame, sort_by=by, ascending=ascending, columns=["Mode"])
            assert list(shown["Mode"].str.contains("partial")) == [False, True], (by, ascending)


def test_a_later_partial_run_replaces_an_earlier_partial_one_only(tmp_path: Path) -> None:
    write_run(tmp_path, "full", range(20), "2026-01-01T00:00:00+00:00")
    write_run(tmp_path, "two", [2, 4], "2026-02-01T00:00:00+00:00")
    write_run(tmp_path, "five", range(5), "2026-03-01T00:00:00+00:00")
    frame, note = _board(tmp_path)
    assert list(frame["Run"]) == ["full", "five"]
    assert "run two not shown: run five is a later partial run of the same model" in note


def test_the_partial_marker_names_n_and_the_split() -> None:
    from mmspubench.space.leaderboard import partial_marker

    assert (
        partial_marker({"dataset": {"n": 2, "split_n": 90}, "config": {"limit": 2}}) == "partial (n=2 of 90)"
    )
    assert partial_marker({"dataset": {"n": 90, "split_n": 90}, "config": {"limit": 100}}) == ""
    assert partial_marker({"dataset": {"n": 90, "split_n": 90}, "config": {"limit": None}}) == ""
    # an older run recording no split size: the limit it ran with
    assert partial_marker({"dataset": {"n": 5}, "config": {"limit": 5}}) == "partial (--limit 5, n=5)"
    assert partial_marker({"dataset": {"n": True, "split_n": "x"}, "config": {"limit": True}}) == ""


def test_runs_differing_only_in_answer_mode_say_so_in_the_default_columns(tmp_path: Path) -> None:
    write_run(tmp_path, "gen", range(20), "2026-01-01T00:00:00+00:00", answer_mode="generate")
    write_run(tmp_path, "lp", range(20), "2026-01-01T00:00:00+00:00", answer_mode="logprob")
    frame, _ = _board(tmp_path)
    shown = view_frame(frame)  # the default columns
    assert "Mode" in DEFAULT_COLUMNS and len(shown) == 2
    distinct = [c for c in shown.columns if shown[c].astype(str).nunique() > 1]
    assert distinct and set(shown["Mode"]) == {"generate", "logprob"}


def test_the_chart_legend_marks_the_partial_run(tmp_path: Path) -> None:
    write_run(tmp_path, "full", range(20), "2026-01-01T00:00:00+00:00")
    write_run(tmp_path, "quick", [2, 4], "2026-02-01T00:00:00+00:00")
    state = handlers.load_state(handlers.SpaceConfig(results=str(tmp_path), hub_models=()))
    labels = [s.label for s in state.series]
    assert len(labels) == 2 and labels[1].endswith("[partial (n=2 of 20)]") and "partial" not in labels[0]


def test_of_two_runs_made_the_same_day_the_later_one_is_kept(tmp_path: Path) -> None:
    write_run(tmp_path, "z-morning", range(20), "2026-03-01T08:00:00+00:00")
    write_run(tmp_path, "a-evening", range(20), "2026-03-01T20:00:00+00:00")
    # 21:00 in UTC+2 is 19:00 UTC: earlier than a-evening, though its text sorts after it
    write_run(tmp_path, "b-east", range(20), "2026-03-01T21:00:00+02:00")
    frame, note = _board(tmp_path)
    # was: z-morning kept (the same day, then the folder name), called the later run
    assert list(frame["Run"]) == ["a-evening"], note
    assert "run z-morning not shown: run b-east is a later run" in note
    assert "run b-east not shown: run a-evening is a later run" in note
