"""Broken model folders are one line before any item runs: exit 2, no run folder left behind.

Each folder is the tiny LLaVA loaded with ``from_pretrained``, broken in one way, and saved again
(or, for damaged weights, cut short on disk).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from transformers import AutoModelForImageTextToText, AutoProcessor

from tests.eval.tiny_models import tiny_model_dir


def _saved(folder: Path, base: Path, edit: Callable[[Any, Any], None]) -> None:
    processor = AutoProcessor.from_pretrained(base)
    model = AutoModelForImageTextToText.from_pretrained(base)
    edit(processor, model)
    processor.save_pretrained(folder)
    model.save_pretrained(folder)


def _template(text: str) -> Callable[[Any, Any], None]:
    def edit(processor: Any, model: Any) -> None:
        processor.chat_template = text

    return edit


def _no_pad(processor: Any, model: Any) -> None:
    processor.tokenizer.pad_token = None


def _small_embeddings(processor: Any, model: Any) -> None:
    model.resize_token_embeddings(50)  # config and weights agree, the tokenizer has more ids


def _truncate(keep: Callable[[int], int]) -> Callable[[Path], None]:
    def cut(folder: Path) -> None:
        weights = folder / "model.safetensors"
        data = weights.read_bytes()
        weights.write_bytes(data[: keep(len(data))])

    return cut


def _vocab_size(size: int) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        config["text_config"]["vocab_size"] = size
        (folder / "config.json").write_text(json.dumps(config))

    return edit


BROKEN: dict[str, tuple[Callable[[Any, Any], None] | None, Callable[[Path], None] | None, str]] = {
    "template-raises": (_template("{{ raise_exception('no images, please') }}"), None, "chat template fails"),
    "template-syntax": (_template("{% for m in messages %}{{ m['role'] }"), None, "TemplateSyntaxError"),
    "no-pad-token": (_no_pad, None, "has no pad token"),
    "weights-half": (None, _truncate(lambda n: n // 2), "damaged or truncated"),
    "weights-header": (None, _truncate(lambda n: 20), "damaged or truncated"),
    "vocab-smaller": (None, _vocab_size(100), "do not match its config.json"),
    "vocab-larger": (None, _vocab_size(5000), "do not match its config.json"),
    "tokenizer-larger": (_small_embeddings, None, "embedding table only 50 rows"),
}


@pytest.fixture(scope="module")
def broken_root(session_cache: Path) -> Path:
    base = tiny_model_dir("llava", session_cache)
    root = session_cache / "broken-models"
    if not root.is_dir():
        root.mkdir()
        for name, (edit, after, _) in BROKEN.items():
            _saved(root / name, base, edit or (lambda processor, model: None))
            if after is not None:
                after(root / name)
    return root


@pytest.mark.parametrize(
    ("name", "batch"), [*((name, "8") for name in BROKEN), ("no-pad-token", "1"), ("template-raises", "1")]
)
def test_a_broken_model_folder_is_one_line_and_leaves_no_run(
    name: str, batch: str, broken_root: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["eval", "--model", str(broken_root / name), "--limit", "2", "--batch-size", batch]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("mmspubench eval: error: model ") and BROKEN[name][2] in err[0]
    assert not out.exists()


def test_a_sound_copy_of_the_same_model_runs(broken_root: Path, session_cache: Path, tmp_path: Path) -> None:
    """The folders above fail for their one defect: the same save path without it runs."""
    sound = tmp_path / "sound"
    _saved(sound, tiny_model_dir("llava", session_cache), lambda processor, model: None)
    out = tmp_path / "run"
    assert main(["eval", "--model", str(sound), "--limit", "2", "--out", str(out), "--no-progress"]) == 0
    assert (out / "results.json").is_file()
