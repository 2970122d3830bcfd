from __future__ import annotations

import html
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

from tests.eval.submit.test_submit import REVISION, make_run, set_published_split

from .fake_model import TableModel
from .fixtures import make_dataset, results_json, sample_record, write_run
from .test_live import LETTERS, _png


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
    assert handlers.cgla_sources(state) == [("org-a", "org-a"), (LIVE_SOURCE, LIVE_SOURCE)]
    frame, text, record = handlers.show_cgla(state, "000000", "org-a", None)
    assert frame.loc[frame["role"] == WINNER, "attribute"].item() == "bright sunlight"
    assert "CGLA_min = -1.0000" in text and record["id"] == "000000"
    assert text.startswith("From results run `org-a`.")  # as when the item opened (preview.results_cgla)
    assert "Continuation scored" in handlers.show_prompts(record)
    with pytest.raises(MMSpuBenchError, match="has no record of item '000001'"):
        handlers.show_cgla(state, "000001", "org-a", None)
    frame, text, record = handlers.show_cgla(state, "000000", LIVE_SOURCE, BUNDLED_CHOICE)
    # live: best core -2.0 (four legs), spurious: sand -2.5, sunlight default -9 -> CGLA_min 0.5
    assert record["cgla_min"] == pytest.approx(0.5)
    assert html.unescape(text).startswith(f"Computed live with {BUNDLED_CHOICE}.")
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


def test_cgla_sources_label_runs_by_model_and_variant_standard_first(tmp_path: Path) -> None:
    """Explore's "CGL from": labels name the model and variant (not the run folder), a standard run is
    the default (first), a ceiling run last; the reading keeps saying which run after "Show CGLA"."""
    runs = tmp_path / "runs"
    for name, variant in [("a-ceiling", "attribute-hint"), ("b-focus", "core-focus"), ("c-std", "standard")]:
        make_run(runs / name, model_id="org/m", prompt_variant=variant)
    make_run(runs / "d-std", model_id="org/n")
    dataset = make_dataset()
    entries = load_entries(runs)
    board = leaderboard_frame(entries)
    samples = {str(e.row["Run"]): runs / str(e.row["Run"]) / "samples.jsonl" for e in entries}
    state = SpaceState(
        dataset=dataset,
        dataset_label="fixture",
        index=build_index(dataset),
        board=board,
        runs=samples,
        cgla_choices=handlers.cgla_choices(board, samples),
    )
    choices = handlers.cgla_sources(state)
    assert choices == [
        ("org/m · standard", "c-std"),
        ("org/n · standard", "d-std"),
        ("org/m · core-focus", "b-focus"),
        ("org/m · attribute-hint (ceiling)", "a-ceiling"),
        (LIVE_SOURCE, LIVE_SOURCE),
    ]
    assert "Run tab" not in LIVE_SOURCE and "above the tabs" in LIVE_SOURCE  # where the Model dropdown is


def test_cgla_source_labels_of_two_runs_of_one_model_and_variant_name_the_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs / "one", model_id="org/m")
    make_run(runs / "two", model_id="org/m")
    entries = load_entries(runs)
    samples = {str(e.row["Run"]): runs / str(e.row["Run"]) / "samples.jsonl" for e in entries}
    labels = [label for label, _ in handlers.cgla_choices(leaderboard_frame(entries), samples)]
    assert labels == ["org/m · standard (run one)", "org/m · standard (run two)"]


def test_the_submit_tab_keeps_the_reason_on_the_page_in_its_own_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_published_split(monkeypatch)
    results = make_run(tmp_path / "run")
    upload = (str(results), str(results.parent / "samples.jsonl"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("MMSPUBENCH_PUBLISHED_REVISION", raising=False)

    def verdict_of(repo: str) -> tuple[str, str]:
        verdict, yaml_text = handlers.submit_verdict(*upload, repo)
        return html.unescape(verdict), yaml_text  # escaped Markdown on the page

    verdict, yaml_text = verdict_of("org/model")  # no revision set on this Space
    assert verdict.startswith("**Not valid.** cannot look up the published revision") and yaml_text == ""
    assert "--dataset-revision" not in verdict and "Space variable MMSPUBENCH_PUBLISHED_REVISION" in verdict
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    verdict, _ = verdict_of("org/not a repo")
    assert verdict.startswith("**Not valid.** Model repo") and "--model-repo" not in verdict
    data = json.loads(results.read_text())
    data["cgla"]["acc"] = 99.0
    results.write_text(json.dumps(data))
    verdict, _ = verdict_of("org/model")
    assert verdict.startswith("**Not valid.**") and "cgla.acc" in verdict
    assert html.unescape(handlers.submit_verdict(None, None, "org/model")[0]).endswith(
        "upload both results.json and samples.jsonl of the run"
    )
