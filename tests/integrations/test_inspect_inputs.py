"""Bad input to the Inspect task, the provider and ingest: one clear error, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError

pytest.importorskip("inspect_ai")


def test_an_unknown_prompt_variant_is_refused_before_the_data_is_read() -> None:
    from mmspubench.integrations.inspect.task import mm_spubench

    with pytest.raises(MMSpuBenchError, match="prompt_variant"):
        mm_spubench(dataset="/nonexistent", prompt_variant="no-such-variant")


@pytest.mark.parametrize("name", ["core-focus", "reasoning", "attribute-hint"])
def test_a_prompt_variant_gives_the_texts_of_mmspubench_eval(name: str) -> None:
    from inspect_ai.model import ContentText
    from mmspubench.eval import prompts
    from mmspubench.integrations.inspect.task import mm_spubench

    task = mm_spubench(prompt_variant=name, limit=2)
    chosen = prompts.variant(name)
    sample = task.dataset[0]
    assert not isinstance(sample.input, str)
    system, user = sample.input
    assert system.content == chosen.system
    text = [part.text for part in user.content if isinstance(part, ContentText)]
    assert sample.metadata is not None
    item_id = sample.id
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.dataset_builder.schema import Item

    rows = load_benchmark(default_dataset_dir())
    item = next(Item.from_row(r, "bundled") for r in rows if r["id"] == item_id)
    expected = prompts.mcq_prompt(item.question, item.options, "generate", name, item.core_attributes)
    assert text == [expected.user_text]
    assert task.metadata is not None and task.metadata["prompt_variant"] == name
    assert task.metadata["ceiling"] is chosen.ceiling
    if name == "attribute-hint":
        assert all(a in text[0] for a in item.core_attributes)


@pytest.mark.parametrize(
    ("images", "expected"),
    [
        (["https://example.com/a.png"], "data: URI"),
        (["file:///etc/passwd"], "data: URI"),
        (["data:image/png;base64,AA", "data:image/png;base64,AA"], "at most one image"),
    ],
)
def test_the_provider_takes_at_most_one_inline_image(images: list[str], expected: str) -> None:
    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, ContentImage, ContentText
    from mmspubench.integrations.inspect.provider import to_prompt

    parts: list[Any] = [ContentImage(image=image) for image in images] + [ContentText(text="q")]
    with pytest.raises(MMSpuBenchError, match=expected):
        messages: list[ChatMessage] = [ChatMessageSystem(content="s"), ChatMessageUser(content=parts)]
        to_prompt(messages)


def test_the_provider_reads_a_request_without_an_image_as_a_text_only_prompt() -> None:
    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, ContentText
    from mmspubench.integrations.inspect.provider import to_prompt

    messages: list[ChatMessage] = [
        ChatMessageSystem(content="s"),
        ChatMessageUser(content=[ContentText(text="q")]),
    ]
    prompt, image = to_prompt(messages)
    assert image is None and (prompt.system, prompt.user_text) == ("s", "q")


def test_ingest_refuses_a_run_folder_that_holds_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text("{}")
    samples = tmp_path / "s.jsonl"
    samples.write_text('{"mm_spubench_acc": {"id": "000000"}}\n')
    assert main(["ingest", "lmms-eval", str(samples), "--out", str(out), "--model", "org/model"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not an empty folder" in err and "\n" not in err
    assert (out / "results.json").read_text() == "{}"
