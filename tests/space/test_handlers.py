from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space import handlers
from mmspubench.space.cgla_view import WINNER
from mmspubench.space.explore import build_index
from mmspubench.space.handlers import LIVE_SOURCE, SELECTED_ITEM, UPLOADED_IMAGE, SpaceState
from mmspubench.space.leaderboard import leaderboard_frame, load_entries, plot_series
from mmspubench.space.live import BUNDLED_CHOICE, ModelCache

from .fake_model import TableModel
from .fixtures import make_dataset, results_json, sample_record, write_run
from .test_live import LETTERS, _png
from .test_submit import REVISION, make_run, set_published_split


@pytest.fixture
def state(tmp_path: Path) -> SpaceState:
    dataset = make_dataset()
    run = write_run(tmp_path / "runs", "org-a", results_json("org/a", {"BG": 50.0}, 50.0, 40.0, 3))
    (run / "samples.jsonl").write_text(json.dumps(sample_record("000000")) + "\n")
    model = TableModel(LETTERS, {"four legs": -2.0, "furry snout": -3.0, "sand background": -2.5})
    return SpaceState(
        dataset=dataset,
        dataset_label="fixture",
        index=build_index(dataset),
        board=leaderboard_frame(load_entries(tmp_path / "runs")),
        runs={"org-a": run / "samples.jsonl"},
        series=plot_series(tmp_path / "runs", load_entries(tmp_path / "runs")),
        models=ModelCache([], loader=lambda source: model),
    )


def test_explore_flow(state: SpaceState) -> None:
    frame = handlers.filter_items(state, ["Orientation (Ori.)"], None, None, None)
    item_id = handlers.selected_id(frame, 0)
    assert item_id == "000001"
    image, text, options = handlers.open_item(state, item_id)
    assert image.size == (32, 24) and "upside down" in text and list(options["correct"]) == ["✓", "", "", ""]
    with pytest.raises(MMSpuBenchError, match="no item in that row"):
        handlers.selected_id(frame, 5)
    with pytest.raises(MMSpuBenchError, match="no item selected"):
        handlers.open_item(state, "")


def test_explore_opens_on_the_first_item(state: SpaceState) -> None:
    item_id, image, text, options = handlers.first_item(state)
    assert item_id == "000000" and image is not None and image.size == (32, 24)
    assert "Item `000000`" in text and options is not None and len(options) == 4


def test_cgla_from_run_and_live(state: SpaceState) -> None:
    assert handlers.cgla_sources(state) == ["org-a", LIVE_SOURCE]
    frame, text, record = handlers.show_cgla(state, "000000", "org-a", None)
    assert frame.loc[frame["role"] == WINNER, "attribute"].item() == "bright sunlight"
    assert "CGLA_min = -1.0000" in text and record["id"] == "000000"
    assert "Continuation scored" in handlers.show_prompts(record)
    with pytest.raises(MMSpuBenchError, match="has no record of item '000001'"):
        handlers.show_cgla(state, "000001", "org-a", None)
    frame, text, record = handlers.show_cgla(state, "000000", LIVE_SOURCE, BUNDLED_CHOICE)
    # live: best core -2.0 (four legs), spurious: sand -2.5, sunlight default -9 -> CGLA_min 0.5
    assert record["cgla_min"] == pytest.approx(0.5)
    assert frame.loc[frame["role"] == WINNER, "attribute"].item() == "sand background"
    with pytest.raises(MMSpuBenchError, match="show a CGLA chart first"):
        handlers.show_prompts(None)


def test_run_model_on_item_and_upload(state: SpaceState, tmp_path: Path) -> None:
    answer, probs, cgl, _text, record = handlers.run_model(
        state, BUNDLED_CHOICE, SELECTED_ITEM, "000000", None, *[None] * 9
    )
    assert record["prediction"] == "B" and "(correct)" in answer  # item 000000's answer is B
    assert len(cgl) == 4 and probs["probability"].sum() == pytest.approx(1.0)
    upload = str(_png(tmp_path))
    answer, *_ = handlers.run_model(
        state,
        BUNDLED_CHOICE,
        UPLOADED_IMAGE,
        None,
        upload,
        "Which?",
        "a",
        "b",
        "c",
        "d",
        "C",
        "thing",
        "four legs",
        "sand background",
    )
    assert "wrong (correct: C)" in answer
    with pytest.raises(MMSpuBenchError, match="no item selected"):
        handlers.run_model(state, BUNDLED_CHOICE, SELECTED_ITEM, "", None, *[None] * 9)


def test_leaderboard_handlers(state: SpaceState) -> None:
    table = handlers.leaderboard_table(state, "org/a", ["BG", "CGLA_acc"], "BG", True)
    assert list(table.columns) == ["Model", "BG", "CGLA_acc"] and len(table) == 1
    assert len(handlers.leaderboard_table(state, "nobody", None, None, None)) == 0
    pytest.importorskip("matplotlib")
    figure = handlers.leaderboard_plot(state)  # report --plot's grouped bars (test_leaderboard_chart.py)
    accuracy = figure.axes[0]
    assert [round(b.get_height(), 6) for b in accuracy.patches][:2] == [50.0, 0.0]  # BG, then TN: none
    assert [t.get_text() for t in accuracy.get_legend().get_texts()] == ["org/a"]


def test_validate_upload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    set_published_split(monkeypatch)
    results = make_run(tmp_path / "run")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    # Gradio hands over uploads under their own names: the handler must pair them itself.
    shutil.copy(results, uploads / "r.json")
    shutil.copy(results.parent / "samples.jsonl", uploads / "s.jsonl")
    verdict, text = handlers.validate_upload(str(uploads / "r.json"), str(uploads / "s.jsonl"), "org/model")
    assert verdict.startswith("**Valid.** 20 samples") and "task_id: mcq_accuracy" in text
    with pytest.raises(MMSpuBenchError, match="upload both"):
        handlers.validate_upload(None, str(uploads / "s.jsonl"), "org/model")
    data = json.loads((uploads / "r.json").read_text())
    data["cgla"]["acc"] = 99.0
    (uploads / "r.json").write_text(json.dumps(data))
    with pytest.raises(MMSpuBenchError, match=r"cgla\.acc"):
        handlers.validate_upload(str(uploads / "r.json"), str(uploads / "s.jsonl"), "org/model")
