"""Explore shows the reasoning of a thinking run made without CGLA (``eval --metrics accuracy``):
"CGL from" offers it for its replies, labelled ``(replies only)`` and after the runs with CGLA; on
choosing it, and on opening an item while it is chosen, the CGL panel draws no chart and says why,
then shows the reply with its reasoning folded. An accuracy-only run without reasoning is still
not offered, and the note under the dropdown still names it."""

from __future__ import annotations

import html

import pytest
from mmspubench.space import handlers, preview
from mmspubench.space.cgla_sources import REPLIES_ONLY
from mmspubench.space.handlers import SpaceConfig, SpaceState
from mmspubench.space.replies import NO_CGLA, replies_reading

from .release_runs import write_release
from .thinking_runs import THINKING_ON, write_generate_run

ACCURACY = ("accuracy",)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> SpaceState:
    """The Space on the fixture release beside four generate runs: ``cgla`` (thinking, CGLA),
    ``think-acc`` (thinking on, accuracy only), ``served-acc`` (reasoning in its samples only,
    accuracy only) and ``plain-acc`` (no reasoning, accuracy only)."""
    folder = tmp_path_factory.mktemp("replies-only")
    release = write_release(folder / "release")
    root = folder / "runs"
    write_generate_run(root, "cgla", release, "org/cgla", thinking=THINKING_ON)
    write_generate_run(root, "think-acc", release, "org/thinker", thinking=THINKING_ON, metrics=ACCURACY)
    write_generate_run(root, "served-acc", release, "org/served", reasoning_tokens=False, metrics=ACCURACY)
    write_generate_run(
        root, "plain-acc", release, "org/plain", reasoning=False, reasoning_tokens=False, metrics=ACCURACY
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_HOME", str(folder / "hf_home"))
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("HF_DATASETS_OFFLINE", "1")
        return handlers.load_state(SpaceConfig(dataset=str(release), results=str(root), hub_models=()))


def test_thinking_runs_without_cgla_are_offered_for_their_replies(state: SpaceState) -> None:
    choices = handlers.cgla_sources(state)
    runs = [run for _, run in choices]
    assert runs[0] == "cgla"  # a run with CGLA stays the default
    assert set(runs[1:3]) == {"think-acc", "served-acc"} and "plain-acc" not in runs
    labels = dict((run, label) for label, run in choices)
    assert labels["think-acc"] == f"org/thinker · standard {REPLIES_ONLY}", labels
    assert labels["served-acc"].endswith(REPLIES_ONLY) and not labels["cgla"].endswith(REPLIES_ONLY)
    note = html.unescape(state.cgla_note)
    assert "(run plain-acc): no CGLA recorded" in note
    assert "think-acc" not in note and "served-acc" not in note


@pytest.mark.parametrize("run", ["think-acc", "served-acc"])
def test_choosing_or_opening_shows_why_no_chart_and_the_folded_reasoning(state: SpaceState, run: str) -> None:
    for frame, text, record in (
        handlers.show_cgla(state, "000000", run, None),  # on choosing the run
        preview.chosen_cgla(state, "000000", run),  # the dropdown's own handler
        preview.results_cgla(state, "000000", run),  # on opening an item while it is chosen
    ):
        assert frame.empty and record is not None and record["id"] == "000000"
        assert text.startswith("From results run ") and NO_CGLA in text, text
        assert "**The run's reply:** B (right) · read by the parser" in text
        assert "<details><summary>Reasoning" in text


def test_a_run_with_cgla_and_a_plain_run_show_as_before(state: SpaceState) -> None:
    frame, text, _ = preview.results_cgla(state, "000000", "cgla")
    assert not frame.empty and NO_CGLA not in text and "<details>" in text
    # the plain accuracy-only run is not offered; chosen anyway, it falls back to a CGLA run
    frame, text, _ = preview.results_cgla(state, "000000", "plain-acc")
    assert not frame.empty and NO_CGLA not in text
    shown = handlers.cgla_on_page(handlers.show_cgla)(state, "000000", "plain-acc", None)
    assert shown[1].startswith(handlers.NOT_SHOWN) and "no CGLA conditions" in shown[1]


def test_the_replies_reading_rule() -> None:
    reply = {"id": "1", "prediction": "A", "correct": True, "raw_output": "A", "reasoning": "hm"}
    assert replies_reading(reply) is not None and NO_CGLA in str(replies_reading(reply))
    assert replies_reading({**reply, "conditions": [{"kind": "core"}]}) is None  # a CGLA record
    assert replies_reading({k: v for k, v in reply.items() if k != "reasoning"}) is None
