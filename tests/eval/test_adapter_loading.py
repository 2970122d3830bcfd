"""Loading errors: each bad model, device or option gives one clear MMSpuBenchError."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.checkpoint.hub import resolve_model
from mmspubench.eval.tiny.tokenizer import TINY_CHAT_TEMPLATE, train_tokenizer

from tests.eval.tiny_models import tiny_model_dir
from tests.helpers.offline_hub import put_in_hub_cache


def _one_line(err: pytest.ExceptionInfo[MMSpuBenchError]) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_unknown_hub_id_offline() -> None:
    with pytest.raises(MMSpuBenchError, match="not found") as err:
        load_model("nobody-here/no-such-vlm")
    assert "nobody-here/no-such-vlm" in _one_line(err)
    assert "offline" in str(err.value)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match="no such folder") as err:
        load_model(tmp_path / "absent")
    _one_line(err)
    with pytest.raises(MMSpuBenchError, match="no such folder"):
        load_model("./absent-model-folder")


def test_a_file_given_as_the_model_is_named_as_a_file(tmp_path: Path) -> None:
    """A weights file is not "no such folder": it is a file, and its folder is named when it is a model's."""
    from mmspubench.eval.bundled import bundled_model_dir

    weights = bundled_model_dir() / "model.safetensors"
    with pytest.raises(MMSpuBenchError) as err:
        load_model(str(weights))
    assert _one_line(err).endswith(
        f"is a file, not a folder; expected the model's folder (the one holding config.json, e.g. "
        f"{str(bundled_model_dir())!r}) or a Hub id"
    )
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(
        MMSpuBenchError,
        match=r"is a file, not a folder; expected the model's folder \(the one holding config.json\) or",
    ):
        load_model(str(tmp_path / "notes.txt"))


def test_invalid_hub_id() -> None:
    with pytest.raises(MMSpuBenchError, match="not a valid Hub id"):
        load_model("bad id with spaces")


def test_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match=r"no config\.json"):
        load_model(tmp_path)


def test_folder_without_chat_template(session_cache: Path, tmp_path: Path) -> None:
    folder = tmp_path / "no-template"
    shutil.copytree(tiny_model_dir("llava", session_cache), folder)
    (folder / "chat_template.jinja").unlink()
    with pytest.raises(MMSpuBenchError, match="no chat template") as err:
        load_model(folder)
    assert str(folder) in _one_line(err)


def test_text_only_model(tmp_path: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(["<|im_start|>", "<|im_end|>"])
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    with pytest.raises(MMSpuBenchError, match="takes no image input") as err:
        load_model(tmp_path)
    assert "'llama'" in _one_line(err)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"dtype": "float64"}, "--dtype"),
        ({"device": "cuda:7"}, "--device"),
        ({"device": "not-a-device"}, "--device"),
        ({"scorer": "quick"}, "--scorer"),
        ({"batch_size": 0}, "--batch-size"),
    ],
)
def test_bad_options(session_cache: Path, options: dict[str, object], match: str) -> None:
    pytest.importorskip("torch")
    import torch

    if options.get("device") == "cuda:7" and torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(MMSpuBenchError, match=match):
        load_model(tiny_model_dir("llava", session_cache), **options)


def test_local_folder_resolves_without_revision(session_cache: Path) -> None:
    folder = tiny_model_dir("llava", session_cache)
    assert resolve_model(folder) == (folder.resolve(), None)
    assert resolve_model(str(folder)) == (folder.resolve(), None)


def test_hub_cache_snapshot_is_used_offline_with_its_revision(
    session_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    # A Hub cache entry as a download leaves it behind: refs/main -> snapshot.
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = put_in_hub_cache(
        tiny_model_dir("llava", session_cache), "tiny-org/tiny-llava", commit, "model"
    )
    model = load_model("tiny-org/tiny-llava")
    assert model.info.id == "tiny-org/tiny-llava"
    assert model.info.revision == commit
    assert Path(model.info.path) == snapshot


def test_remote_code_is_not_run_unless_asked(tmp_path: Path) -> None:
    import json

    config = {
        "model_type": "my_custom_vlm",
        "auto_map": {"AutoConfig": "configuration_custom.CustomConfig"},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "configuration_custom.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(MMSpuBenchError, match="--trust-remote-code") as err:
        load_model(tmp_path)
    _one_line(err)
