"""No text from a run, a dataset or a visitor renders as markup anywhere on the Space."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from markdown_it import MarkdownIt
from mmspubench.app_guard import guarded
from mmspubench.dataset_builder.schema import Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.space import cgla_view, explore, live
from mmspubench.space.leaderboard import (
    TEXT_COLUMNS,
    column_datatypes,
    leaderboard_frame,
    load_entries,
    plain_model,
    type_comparison_frame,
    view_frame,
)
from PIL import Image

from .fake_model import TableModel
from .fixtures import results_json, sample_record, write_run

IMG = "<img src=https://evil.example/x.png>"
LINK = "[click](https://evil.example)"
HOSTILE = f"{IMG} {LINK} ![i](https://evil.example/i.png) <script>x()</script> **b** https://evil.example"
"""One text holding every construct an attacker would try."""
TAGS = ("<img", "<a ", "<script", "<strong", "<em", "<h1", "<h2", "<ul", "<ol", "<table", "<pre")


def render(markdown: str) -> str:
    """A permissive renderer: CommonMark with raw HTML on, plus GFM tables."""
    return MarkdownIt("commonmark").enable("table").render(markdown)


def assert_inert(markdown: str, allowed: tuple[str, ...] = ()) -> None:
    out = render(markdown)
    for tag in TAGS:
        if tag not in allowed:
            assert tag not in out, (tag, out)
    assert "evil.example" not in " ".join(a for a in out.split('href="')[1:])


@pytest.mark.parametrize(
    "model_id",
    [f"org/{IMG}", LINK, f"org/name]({'https://evil.example'})", "org/x\n| a | b |", f"/abs/{IMG}"],
)
def test_leaderboard_model_ids_are_text(tmp_path: Path, model_id: str) -> None:
    write_run(tmp_path, "r", results_json(model_id, {"BG": 10.0}, 10.0, 5.0, 3))
    frame = leaderboard_frame(load_entries(tmp_path))
    cell = str(frame.loc[0, "Model"])
    assert_inert(cell)
    assert plain_model(cell) in model_id.replace("\n", " ")  # what the visitor reads is the id itself
    assert set(type_comparison_frame(frame)["model"]) == {plain_model(cell)}


def test_a_valid_hub_id_is_the_only_link(tmp_path: Path) -> None:
    write_run(tmp_path, "r", results_json("org/model-a", {"BG": 10.0}, 10.0, 5.0, 3))
    cell = str(leaderboard_frame(load_entries(tmp_path)).loc[0, "Model"])
    assert render(cell).count('<a href="https://huggingface.co/org/model-a">') == 1
    assert len(view_frame(leaderboard_frame(load_entries(tmp_path)), query="org/model-a")) == 1


def test_other_leaderboard_texts_are_plain_text_columns(tmp_path: Path) -> None:
    results = results_json("org/m", {"BG": 10.0}, 10.0, 5.0, 3)
    results["model"].update(scorer_used="plain", scorer_fallback_reason=HOSTILE)
    results["config"]["answer_mode"] = HOSTILE
    results["created_at"] = HOSTILE
    results["dataset"]["revision"] = HOSTILE
    write_run(tmp_path, IMG.replace("/", "_"), results)
    frame = leaderboard_frame(load_entries(tmp_path))
    types = dict(zip(frame.columns, column_datatypes(list(frame.columns)), strict=True))
    assert types["Model"] == "markdown"
    for column in TEXT_COLUMNS:
        assert types[column] == "str", column  # gradio shows "str" cells as text, never as markup
    assert {c for c, t in types.items() if t == "markdown"} == {"Model"}


def _hostile_item() -> Item:
    return Item(
        id=f"0{IMG}",
        image=Image.new("RGB", (4, 4)),
        question=HOSTILE,
        options=(HOSTILE, f"b {LINK}", "c", "d"),
        answer="A",
        class_name=IMG,
        core_attributes=(LINK, "- list item"),
        spurious_attributes=(HOSTILE,),
        spurious_types=("background",),
        source="ObjectNet",
    )


def test_explore_item_view_shows_dataset_texts_as_text() -> None:
    text = explore.item_markdown(_hostile_item())
    assert_inert(text, allowed=("<h2", "<ul", "<strong"))  # the view's own heading, lists and labels
    assert render(text).count("<li>") == 3  # one per attribute: none adds a list of its own
    assert HOSTILE in html.unescape(render(text))


def _hostile_record() -> dict[str, Any]:
    record = sample_record()
    record["class_name"] = IMG
    for condition in record["conditions"]:
        condition["attribute"] = f"{condition['attribute']} {HOSTILE}"
        condition["prompt"] = f"{condition['prompt']}\n```\n{IMG}\n```\n{LINK}"
        condition["continuation"] = f" {LINK}"
    return record


def test_cgla_view_shows_record_texts_as_text() -> None:
    record = _hostile_record()
    assert_inert(cgla_view.cgla_markdown(record), allowed=("<strong", "<em"))
    prompts = cgla_view.prompts_markdown(record)
    assert_inert(prompts, allowed=("<pre",))
    out = render(prompts)
    assert out.count("<pre>") == 2 * len(record["conditions"])  # each prompt stays in its own block
    assert record["conditions"][0]["prompt"] in html.unescape(out)


def test_live_answer_shows_a_visitors_option_as_text(tmp_path: Path) -> None:
    picture = tmp_path / "x.png"
    Image.new("RGB", (16, 16)).save(picture)
    item = live.custom_item(
        live.load_upload(str(picture)), "q", ["dog", IMG, "cow", "owl"], "b", "cat", LINK, "sofa"
    )
    model = TableModel({"A": -3.0, "B": -1.0, "C": -3.0, "D": -3.0}, {})
    result = live.ModelCache((), loader=lambda source: model).run(live.BUNDLED_CHOICE, item)
    assert_inert(result.answer_markdown, allowed=("<strong",))
    assert IMG in html.unescape(result.answer_markdown)


def test_error_messages_are_escaped_for_the_error_modal() -> None:
    def refuse(x: str) -> None:
        raise MMSpuBenchError(f"field 'model.id': the run evaluated {x!r}")

    def crash(x: str) -> None:
        raise KeyError(x)

    for fn in (refuse, crash):
        with pytest.raises(gr.Error) as err:
            guarded(fn)(IMG)
        assert "<" not in err.value.message and IMG in html.unescape(err.value.message)


def test_the_submit_verdict_quotes_nothing_unvalidated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmspubench.space import handlers

    from tests.eval.submit.test_submit import REVISION, make_run, restamp, set_published_split

    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    set_published_split(monkeypatch)
    results = make_run(tmp_path / "run")
    with pytest.raises(MMSpuBenchError, match="not a valid repo id"):
        handlers.validate_upload(str(results), str(results.parent / "samples.jsonl"), f"org/{IMG}")
    data = json.loads(results.read_text())
    data["model"]["id"] = f"org/{IMG}"
    results.write_text(json.dumps(data))
    restamp(results)
    verdict, _ = handlers.validate_upload(str(results), str(results.parent / "samples.jsonl"), "org/model")
    assert_inert(verdict, allowed=("<strong", "<pre"))
