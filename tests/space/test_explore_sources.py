"""Explore's "CGL from": only runs with CGLA offered (the others named on the page, with why), and a
new choice never leaves the previous choice's reading on the page."""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Any

import pytest
from mmspubench.space import handlers, preview
from mmspubench.space.handlers import LIVE_SOURCE, SpaceState
from mmspubench.space.layout import build_app

from tests.eval.submit.test_submit import _sample

from .release_runs import write_release_of
from .test_board_partial import write_run


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SpaceState:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runs = tmp_path / "runs"
    write_run(runs, "full", range(20), "2026-01-01T00:00:00+00:00")
    write_run(runs, "quick", [2, 4], "2026-01-02T00:00:00+00:00")
    write_run(runs, "acc-only", range(20), "2026-01-03T00:00:00+00:00", metrics=("accuracy",))
    # The items the runs were made on: a run's record is shown only under its own item.
    release = write_release_of(tmp_path / "release", [_sample(i) for i in range(20)])
    return handlers.load_state(handlers.SpaceConfig(dataset=str(release), results=str(runs), hub_models=()))


def _component(demo: Any, elem_id: str) -> Any:
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def test_cgl_from_offers_only_runs_with_cgla_and_the_page_says_why(state: SpaceState) -> None:
    offered = [run for _, run in handlers.cgla_sources(state)]
    assert offered == ["full", "quick", LIVE_SOURCE]  # the accuracy-only run was the default
    note = html.unescape(state.cgla_note)
    assert "org/m · standard (run acc-only): no CGLA recorded" in note and "full" not in note
    demo = build_app(state=state)
    shown = _component(demo, "cgla-source-note")
    assert shown.visible and shown.value == state.cgla_note  # on the page, not a fading message
    assert [value for _, value in _component(demo, "cgla-source").choices] == offered


def test_no_note_when_every_run_is_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_run(tmp_path, "full", range(20), "2026-01-01T00:00:00+00:00")
    state = handlers.load_state(handlers.SpaceConfig(results=str(tmp_path), hub_models=()))
    assert state.cgla_note == "" and not _component(build_app(state=state), "cgla-source-note").visible


def test_a_new_choice_replaces_or_empties_the_reading(state: SpaceState) -> None:
    frame, text, record = preview.chosen_cgla(state, "000010", "full")
    assert len(frame) == 4 and text.startswith("From results run `org/m · standard (run full)`.")
    assert record is not None and record["id"] == "000010"
    frame, text, record = preview.chosen_cgla(state, "000010", "quick")  # a run of items 2 and 4
    assert frame.empty and record is None and "has no record of item '000010'" in html.unescape(text)
    frame, text, record = preview.chosen_cgla(state, "000010", LIVE_SOURCE)
    assert frame.empty and record is None and "Press **Show CGLA**" in text and "000010" in text
    frame, text, record = preview.chosen_cgla(state, "", "full")
    assert frame.empty and record is None


def test_the_dropdown_change_is_wired_to_the_reading(state: SpaceState) -> None:
    demo = build_app(state=state)
    source = _component(demo, "cgla-source")
    outputs = {b._id for b in (_component(demo, "explore-cgl-plot"), _component(demo, "explore-cgla-text"))}
    changed = [fn for fn in demo.fns.values() if (source._id, "change") in [(t[0], t[1]) for t in fn.targets]]
    assert len(changed) == 1 and changed[0].api_name == "chosen_cgla"
    assert outputs <= {b._id for b in changed[0].outputs}


def test_with_no_run_offering_cgla_the_default_is_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_run(tmp_path, "acc-only", range(20), "2026-01-03T00:00:00+00:00", metrics=("accuracy",))
    state = handlers.load_state(handlers.SpaceConfig(results=str(tmp_path), hub_models=()))
    # was: the accuracy-only run, which the note under the dropdown says is not offered
    assert handlers.cgla_sources(state) == [(LIVE_SOURCE, LIVE_SOURCE)]
    assert "(run acc-only): no CGLA recorded" in html.unescape(state.cgla_note)
    assert _component(build_app(state=state), "cgla-source").value == LIVE_SOURCE


def test_show_cgla_says_on_the_page_why_nothing_is_shown(
    state: SpaceState, caplog: pytest.LogCaptureFixture
) -> None:
    demo = build_app(state=state)
    show = next(fn for fn in demo.fns.values() if fn.api_name == "show_cgla").fn
    assert show is not None
    for run, why in (("acc-only", "has no CGLA conditions"), ("quick", "has no record of item '000010'")):
        with caplog.at_level(logging.INFO, logger="mmspubench.space"):
            figure, text, record = show("000010", run, None)  # was: gr.Error, an Error badge on each output
        assert text.startswith(handlers.NOT_SHOWN) and why in html.unescape(text) and record is None
        assert figure is None  # the chart emptied: no stale one beside the reason
        assert any(why in r.getMessage() for r in caplog.records)
    figure, text, record = show("000010", "full", None)
    assert record is not None and text.startswith("From results run")
