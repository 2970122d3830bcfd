from __future__ import annotations

import html
import math
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space import live
from mmspubench.space.live import BUNDLED_CHOICE, ModelCache, custom_item, load_upload, parse_attributes
from PIL import Image

from .fake_model import TableModel

LETTERS = {"A": -2.0, "B": -1.0, "C": -3.0, "D": -1.0 - math.log(3.0)}


def _png(tmp_path: Path, size: tuple[int, int] = (16, 16), name: str = "x.png", fmt: str = "PNG") -> Path:
    path = tmp_path / name
    Image.new("RGB", size, (1, 2, 3)).save(path, format=fmt)
    return path


def _item(tmp_path: Path) -> object:
    return custom_item(
        load_upload(_png(tmp_path)),
        "What is it?",
        ["dog", "cat", "cow", "owl"],
        "b",
        "cat",
        "whiskers\npointed ears",
        "sofa; indoor light",
    )


def test_parse_attributes() -> None:
    assert parse_attributes("a\n b ; c\n\n", "core") == ("a", "b", "c")
    with pytest.raises(MMSpuBenchError, match="has 0 attributes"):
        parse_attributes("  \n", "core")
    with pytest.raises(MMSpuBenchError, match="has 6 attributes"):
        parse_attributes("a;b;c;d;e;f", "core")
    with pytest.raises(MMSpuBenchError, match="at most 300"):
        parse_attributes("x" * 301, "core")


def test_upload_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_upload(_png(tmp_path)).size == (16, 16)
    assert load_upload(_png(tmp_path, name="y.jpg", fmt="JPEG")).mode == "RGB"
    with pytest.raises(MMSpuBenchError, match="no image uploaded"):
        load_upload(None)
    with pytest.raises(
        MMSpuBenchError, match=r"^z\.bmp is a PNG picture, but its name ends in \.bmp; rename it"
    ):
        load_upload(_png(tmp_path, name="z.bmp", fmt="PNG"))
    with pytest.raises(
        MMSpuBenchError, match=r"^fake\.png is a GIF image; upload a PNG, JPEG or WebP picture$"
    ):
        load_upload(_png(tmp_path, name="fake.png", fmt="GIF"))
    (tmp_path / "junk.png").write_bytes(b"not an image")
    with pytest.raises(MMSpuBenchError, match="not an image"):
        load_upload(tmp_path / "junk.png")
    monkeypatch.setattr(live, "MAX_UPLOAD_PIXELS", 100)
    with pytest.raises(MMSpuBenchError, match="16x16 pixels; pictures up to 100 pixels are accepted"):
        load_upload(_png(tmp_path))
    monkeypatch.setattr(live, "MAX_UPLOAD_BYTES", 10)
    with pytest.raises(MMSpuBenchError, match=r"is \d+ bytes; pictures up to 10 bytes are accepted"):
        load_upload(_png(tmp_path))


def test_custom_item_checks(tmp_path: Path) -> None:
    item = _item(tmp_path)
    assert item.answer == "B" and item.core_attributes == ("whiskers", "pointed ears")  # type: ignore[attr-defined]
    image = load_upload(_png(tmp_path))
    with pytest.raises(MMSpuBenchError, match="same text"):
        custom_item(image, "q", ["a", "a", "b", "c"], "A", "c", "x", "y")
    with pytest.raises(MMSpuBenchError, match="'option C' is empty"):
        custom_item(image, "q", ["a", "b", " ", "c"], "A", "c", "x", "y")
    with pytest.raises(MMSpuBenchError, match="correct answer 'E'"):
        custom_item(image, "q", ["a", "b", "d", "c"], "E", "c", "x", "y")
    with pytest.raises(MMSpuBenchError, match="'question' has 301 characters"):
        custom_item(image, "q" * 301, ["a", "b", "d", "c"], "A", "c", "x", "y")


def test_run_hand_computed(tmp_path: Path) -> None:
    model = TableModel(LETTERS, {"whiskers": -5.0, "pointed ears": -4.0, "sofa": -4.5, "indoor light": -6.0})
    cache = ModelCache(["org/other"], loader=lambda source: model)
    result = cache.run(BUNDLED_CHOICE, _item(tmp_path))
    # softmax of (-2, -1, -3, -1 - ln 3): weights e^-2, e^-1, e^-3, e^-1 / 3
    weights = [math.exp(-2), math.exp(-1), math.exp(-3), math.exp(-1) / 3]
    expected = [w / sum(weights) for w in weights]
    assert list(result.probabilities["probability"]) == pytest.approx(expected)
    assert list(result.probabilities["chosen"]) == ["other", "chosen", "other", "other"]
    assert result.sample.prediction == "B" and result.sample.correct is True
    assert "**Answer: B. cat** (correct)" in html.unescape(result.answer_markdown)
    # best core -4.0 minus best spurious -4.5
    assert result.sample.cgla_min == pytest.approx(0.5) and result.sample.cgla_acc is True


def test_cache_refuses_models_not_offered_and_loads_once(tmp_path: Path) -> None:
    loads: list[object] = []

    def loader(source: object) -> TableModel:
        loads.append(source)
        return TableModel(LETTERS, {})

    cache = ModelCache(["org/small"], loader=loader)
    assert cache.allowed == (BUNDLED_CHOICE, "org/small")
    with pytest.raises(MMSpuBenchError, match="not offered here"):
        cache.run("evil/huge-model", _item(tmp_path))
    cache.run("org/small", _item(tmp_path))
    cache.run("org/small", _item(tmp_path))
    assert loads == ["org/small"]


def test_hub_model_offline_is_a_readable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = ModelCache(["org/not-cached-model"])
    with pytest.raises(MMSpuBenchError, match="org/not-cached-model"):
        cache.run("org/not-cached-model", _item(tmp_path))
