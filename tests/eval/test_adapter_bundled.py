"""The bundled models: the shipped trained default, and the random one (deterministic build, cache
location, atomic write, loads like a Hub model)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from mmspubench.eval import bundled
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.protocol import ChatPrompt, ScoreRequest
from mmspubench.eval.tiny.llava import build_tiny_llava
from mmspubench.eval.tiny.tokenizer import bundled_corpus_words

from tests.eval.tiny_models import make_image


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()
    }


def test_build_is_deterministic(tmp_path: Path) -> None:
    a = build_tiny_llava(tmp_path / "a")
    b = build_tiny_llava(tmp_path / "b")
    digest_a, digest_b = _digest(a), _digest(b)
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= set(digest_a)
    assert digest_a == digest_b


def test_cache_root_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert bundled.cache_root() == tmp_path / "explicit"
    monkeypatch.delenv("MMSPUBENCH_CACHE")
    assert bundled.cache_root() == tmp_path / "hf" / "mmspubench"
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert bundled.cache_root() == tmp_path / "home" / ".cache" / "huggingface" / "mmspubench"


def test_built_once_cached_and_loads_through_from_pretrained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "cache"))
    folder = bundled.random_model_dir()
    assert folder == tmp_path / "cache" / bundled.bundled_model_name()
    assert folder.name.startswith(bundled.BUNDLED_MODEL_VERSION)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.name]
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert bundled.random_model_dir() == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    model = load_model(folder, scorer="plain")
    assert model.info.adapter == "hf-image-text-to-text/llava"
    context = model.render(ChatPrompt("", "a red circle on grass", "It is a"))
    assert context.startswith("<|im_start|>user\n<image>\n")
    (score,) = model.score([ScoreRequest(make_image(3), context, " circle")])
    assert -50.0 < score < 0.0


def test_class_names_are_few_tokens(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path))
    tokenizer = load_model(bundled.random_model_dir()).processor.tokenizer
    from mmspubench.dataset_builder.synth.vocab import CLASSES

    assert {c.name for c in CLASSES} <= set(bundled_corpus_words())
    for word in ("circle", "background", *(c.name for c in CLASSES)):
        assert len(tokenizer(" " + word, add_special_tokens=False)["input_ids"]) <= 2


def test_default_model_is_the_shipped_biased_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "cache"))
    folder = bundled.bundled_model_dir()
    assert folder == bundled.BIASED_MODEL
    assert not (tmp_path / "cache").exists()  # nothing is built for the default model
    training = (folder / "training.json").read_text()
    assert '"correlation": 0.95' in training


def test_missing_default_model_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mmspubench.errors import MMSpuBenchError

    monkeypatch.setattr(bundled, "BIASED_MODEL", tmp_path / "gone")
    with pytest.raises(MMSpuBenchError, match=r"gone.*--model"):
        bundled.bundled_model_dir()


def test_note_says_what_the_model_is_and_how_to_read_it() -> None:
    note = bundled.bundled_model_note()
    assert "trained" in note and "biased on purpose" in note
    assert "nothing about any real model" in note
    assert "--model" in note
