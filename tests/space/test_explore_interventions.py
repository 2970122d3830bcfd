"""Explore's interventions gallery: an item's image beside its intervened and counterfactual images,
the run's answer under each, and the page saying so when a recorded digest is not the image shown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.eval import interventions
from mmspubench.space import explore, intervention_view, preview
from mmspubench.space.handlers import SpaceState
from mmspubench.space.layout import build_app
from mmspubench.space.leaderboard import FRAME_COLUMNS

from tests.eval.views.interventions.test_view import COL, COLOURED, GOLD, _run, _with_counterfactuals

N = 8
ITEM = min(COLOURED & set(range(N)))
"""A Col. item shown in colour: the colour model answers it wrong, right once the colour is gone."""


def _state(dataset: Any, runs: dict[str, Path]) -> SpaceState:
    return SpaceState(
        dataset=dataset,
        dataset_label="hand-made",
        index=explore.build_index(dataset),
        board=pd.DataFrame(columns=list(FRAME_COLUMNS)),
        runs=runs,
    )


def _twin_run(tmp_path: Path, names: tuple[str, ...] = ("grayscale", "cf:*")) -> tuple[Any, Path]:
    data = _with_counterfactuals(N, ["cue-aligned", "cue-removed"], skip=3)
    _run(tmp_path, dataset=data, metrics=("accuracy", "interventions"), interventions=names)
    return data, tmp_path / "run" / "samples.jsonl"


def _pixels(image: Any) -> bytes:
    return bytes(image.convert("RGB").tobytes())


def test_each_changed_image_is_shown_with_the_runs_answer_under_it(tmp_path: Path) -> None:
    data, samples = _twin_run(tmp_path)
    state = _state(data, {"iv": samples})
    item_id = f"{ITEM:06d}"
    assert ITEM in COL
    gallery, text = preview.show_interventions(state, item_id, None)
    wrong = ANSWER_LETTERS[(ITEM + 1) % 4]
    assert [caption for _, caption in gallery] == [
        f"published: {wrong} (wrong)",  # colour shown: the model answers the next letter
        f"grayscale: {GOLD[ITEM]} (right)",
        f"cf:cue-aligned: {GOLD[ITEM]} (right)",  # the twin's counterfactuals here are grey
        f"cf:cue-removed: {GOLD[ITEM]} (right)",
    ]
    row = data[ITEM]
    assert _pixels(gallery[0][0]) == _pixels(row["image"])
    assert _pixels(gallery[1][0]) == _pixels(interventions.grayscale(row["image"]))
    assert _pixels(gallery[2][0]) == _pixels(row["counterfactuals"][0]["image"])
    assert _pixels(gallery[3][0]) == _pixels(row["counterfactuals"][1]["image"])
    assert text.startswith("From results run `iv`: the item asked under 3 intervention(s)")
    assert "not the one the run recorded" not in text  # the page made the pixels the run saw
    # the item without counterfactuals: its published and grayscale images only
    skipped, _ = preview.show_interventions(state, "000003", None)
    assert [caption.split(":")[0] for _, caption in skipped] == ["published", "grayscale"]


def test_a_recorded_digest_that_is_not_the_image_shown_is_said_on_the_page(tmp_path: Path) -> None:
    data, samples = _twin_run(tmp_path)
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    lines[ITEM]["interventions"][0]["digest"] = "0" * 64  # the run saw other pixels
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    gallery, text = preview.show_interventions(_state(data, {"iv": samples}), f"{ITEM:06d}", None)
    assert gallery[1][1].endswith(" · not the image the run saw")
    assert gallery[2][1] == f"cf:cue-aligned: {GOLD[ITEM]} (right)"  # the others as recorded
    assert (
        "`grayscale`: the image shown" in text
        and "is not the one the run recorded (`0000000000000000`)" in text
    )


def test_a_counterfactual_the_run_did_not_ask_is_shown_saying_so(tmp_path: Path) -> None:
    data, samples = _twin_run(tmp_path, names=("grayscale",))
    gallery, _ = preview.show_interventions(_state(data, {"iv": samples}), f"{ITEM:06d}", None)
    captions = [caption for _, caption in gallery]
    assert captions[2:] == ["cf:cue-aligned: not asked", "cf:cue-removed: not asked"]


def test_the_chosen_run_answers_and_without_any_run_the_counterfactuals_are_shown_alone(
    tmp_path: Path,
) -> None:
    data, samples = _twin_run(tmp_path / "a")
    _, plain = _twin_run(tmp_path / "b", names=("grayscale",))
    shutil.copy(plain, tmp_path / "plain.jsonl")
    state = _state(data, {"all": samples, "gray": tmp_path / "plain.jsonl"})
    chosen, text = preview.show_interventions(state, f"{ITEM:06d}", "gray")
    assert "From results run `gray`" in text and chosen[2][1] == "cf:cue-aligned: not asked"
    alone, text = preview.show_interventions(_state(data, {}), f"{ITEM:06d}", None)
    assert [caption for _, caption in alone] == ["published", "cf:cue-aligned", "cf:cue-removed"]
    assert text.startswith("No results run asked this item") and "shown, without answers" in text
    empty, text = preview.show_interventions(_state(data, {}), "no-such-id", None)
    assert empty == [] and "No item opened" in text


def test_odd_entries_of_a_record_are_named_escaped_and_never_crash(tmp_path: Path) -> None:
    data = _with_counterfactuals(2, ["cue-aligned"])
    item = explore.item_view(data, explore.build_index(data), "000000")
    record = {
        "prediction": "Z",
        "correct": True,
        "interventions": [
            "not an object",
            {"name": "<b>zoom</b>", "prediction": "A", "correct": True, "digest": "x"},
            {"name": "cf:cue-missing", "prediction": "A", "correct": True},
            {"name": "blur", "prediction": None, "correct": False, "digest": None},
        ],
    }
    gallery, notes = intervention_view.panels(item, record)
    assert [caption for _, caption in gallery] == [
        "published: unparsed (right)",
        "blur: unparsed (wrong) · not the image the run saw",
        "cf:cue-aligned: not asked",
    ]
    text = intervention_view.reading(item, record, "run", notes)
    # a record's name is shown verbatim (a code span), never as markup
    assert "- `<b>zoom</b>`: no built-in" in text and "`cf:cue-missing`: no built-in" in text
    assert "(`None`)" in text


def test_the_gallery_is_on_the_page_and_follows_the_opened_item(tmp_path: Path) -> None:
    data, samples = _twin_run(tmp_path)
    demo = build_app(state=_state(data, {"iv": samples}))
    blocks = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    gallery = blocks["explore-interventions"]
    assert gallery.value and gallery.format == "png"  # the first item's, lossless
    wired = {fn.api_name: {o._id for o in fn.outputs} for fn in demo.fns.values()}
    for name in ("interventions", "interventions_selected", "interventions_by_id", "chosen_interventions"):
        assert gallery._id in wired[name], name
    assert blocks["explore-interventions-text"]._id in wired["interventions"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_an_item_with_hundreds_of_counterfactuals_shows_the_first_forty_and_says_so() -> None:
    data = _with_counterfactuals(1, [f"cf-{k}" for k in range(60)])
    item = explore.item_view(data, explore.build_index(data), "000000")
    gallery, notes = intervention_view.panels(item, None)
    assert len(gallery) == intervention_view.MAX_PANELS == 40
    text = intervention_view.reading(item, None, None, notes)
    assert "21 more image(s) not shown: the page shows 40" in text


def test_one_intervention_is_two_whole_tiles_with_the_runs_answers(tmp_path: Path) -> None:
    data, samples = _twin_run(tmp_path, names=("grayscale",))
    state = _state(data, {"iv": samples})
    gallery, _ = preview.show_interventions(state, "000003", None)  # no counterfactuals: two pictures
    assert [caption for _, caption in gallery] == [
        f"published: {GOLD[3]} (right)",
        f"grayscale: {GOLD[3]} (right)",
    ]
    blocks = {getattr(b, "elem_id", None): b for b in build_app(state=state).blocks.values()}
    sent = blocks["explore-interventions"].get_config()  # what the browser lays out
    # was: fit_columns (Gradio's default) widened the two to half the page each, taller than the
    # gallery's 240 px, cropped ("cover"), their captions below the fold
    assert sent["fit_columns"] is False and sent["columns"] == 6 and sent["object_fit"] == "contain"
    assert sent["height"] == 240
