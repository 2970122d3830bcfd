"""`build`'s image checks: a counterfactual compared with its item as shown (EXIF orientation
applied, as ``mmspubench eval`` shows both), the ``inspect`` config holding the shown pixels, and a
counterfactual file that is a bomb, unreadable or truncated refused in one line."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
from mmspubench.cli import main
from PIL import Image

from tests.dataset_builder.image_fixtures import (
    SHOWN,
    header_only_png,
    pixels,
    png_bytes,
    set_counterfactual,
    truncated,
    turned_jpeg,
    turned_release,
)


def _build(raw: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["build", "--source", str(raw), "--out", str(out)])
    return code, capsys.readouterr().err


def test_a_counterfactual_of_the_items_shown_size_builds_and_eval_shows_both_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 000000 is stored 48x32 and shown 32x48; its counterfactual is a plain 32x48 PNG."""
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    raw = turned_release(tmp_path / "raw")
    code, err = _build(raw, tmp_path / "built", capsys)
    assert code == 0, err
    item = load_items(load_benchmark(tmp_path / "built"), 1, "built")[0]
    assert item.pil_image.size == item.counterfactuals[0].image.size == SHOWN


def test_a_counterfactual_its_exif_orientation_turns_to_another_size_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 000001 is a plain 24x16 PNG; a counterfactual stored 24x16 but shown 16x24 is refused."""
    raw = turned_release(tmp_path / "raw")
    set_counterfactual(raw, 1, turned_jpeg(size=(24, 16)), ".jpg")
    code, err = _build(raw, tmp_path / "built", capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "record '000001'" in err and "field 'counterfactuals[0].image'" in err, err
    assert "16x24" in err and "EXIF orientation 6" in err, err
    assert not (tmp_path / "built").exists()


def test_the_inspect_config_holds_the_pixels_eval_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    raw = turned_release(tmp_path / "raw")
    assert _build(raw, tmp_path / "built", capsys)[0] == 0
    rows = pq.read_table(next((tmp_path / "built" / "inspect").glob("*.parquet"))).to_pylist()
    items = load_items(load_benchmark(tmp_path / "built"), None, "built")
    for row, item in zip(rows, items, strict=True):
        payload = base64.b64decode(row["image"].partition(",")[2])
        with Image.open(io.BytesIO(payload)) as shown:
            assert np.array_equal(np.asarray(shown.convert("RGB")), np.asarray(item.pil_image)), item.id


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (header_only_png(20_000, 10_000), "over the pixel limit"),
        (b"this is not an image", "unreadable or corrupt"),
        (truncated(png_bytes(pixels((24, 16), 9))), "unreadable or corrupt"),
    ],
    ids=["bomb", "unreadable", "truncated"],
)
def test_a_bad_counterfactual_image_is_refused_by_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, message: str
) -> None:
    raw = turned_release(tmp_path / "raw")
    set_counterfactual(raw, 2, data)
    code, err = _build(raw, tmp_path / "built", capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "record '000002'" in err and "field 'counterfactuals[0].image'" in err and message in err, err
    assert not (tmp_path / "built").exists()
