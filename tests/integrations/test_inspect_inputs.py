"""Bad input to the Inspect task, the provider and ingest: one clear error, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError

pytest.importorskip("inspect_ai")


def test_an_unknown_prompt_variant_is_refused_before_the_data_is_read() -> None:
    from mmspubench.integrations.inspect_task import mm_spubench

    with pytest.raises(MMSpuBenchError, match="prompt_variant"):
        mm_spubench(dataset="/nonexistent", prompt_variant="attribute-hint")


@pytest.mark.parametrize(
    ("image", "expected"),
    [("https://example.com/a.png", "data: URI"), ("file:///etc/passwd", "data: URI"), (None, "one image")],
)
def test_the_provider_takes_one_inline_image_only(image: str | None, expected: str) -> None:
    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, ContentImage, ContentText
    from mmspubench.integrations.inspect_provider import to_prompt

    parts: list[Any] = [ContentText(text="q")]
    if image is not None:
        parts.insert(0, ContentImage(image=image))
    with pytest.raises(MMSpuBenchError, match=expected):
        messages: list[ChatMessage] = [ChatMessageSystem(content="s"), ChatMessageUser(content=parts)]
        to_prompt(messages)


def test_ingest_refuses_a_run_folder_that_holds_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text("{}")
    samples = tmp_path / "s.jsonl"
    samples.write_text('{"mm_spubench_acc": {"id": "000000"}}\n')
    assert main(["ingest", "lmms-eval", str(samples), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not an empty folder" in err and "\n" not in err
    assert (out / "results.json").read_text() == "{}"
