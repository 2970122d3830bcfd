"""Images that are not what they seem, generated in ``tmp_path``: a JPEG turned by its EXIF
orientation, a truncated file, a decompression-bomb header; and a small raw release holding them."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from tests.dataset_builder.raw_fixtures import (
    make_release,
    read_records,
    write_annotation,
    write_png_header_only,
)

ORIENTATION_TAG = 0x0112
"""EXIF's Orientation tag: 6 means "turn 90 degrees clockwise to show", so width and height swap."""
STORED = (48, 32)
"""The turned item's size as stored in the file (width, height)."""
SHOWN = (32, 48)
"""Its size once its EXIF orientation 6 is applied (what ``mmspubench eval`` shows)."""
CF_NAME = "flat"
"""The counterfactual every item of :func:`turned_release` ships."""


def pixels(size: tuple[int, int], seed: int) -> Image.Image:
    """A random RGB picture of ``size`` (width, height)."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8))


def turned_jpeg(size: tuple[int, int] = STORED, orientation: int = 6, seed: int = 7) -> bytes:
    """A JPEG stored at ``size`` whose EXIF orientation tells readers to turn it."""
    exif = Image.Exif()
    exif[ORIENTATION_TAG] = orientation
    buffer = io.BytesIO()
    pixels(size, seed).save(buffer, "JPEG", quality=95, exif=exif)
    return buffer.getvalue()


def png_bytes(image: Image.Image) -> bytes:
    """``image`` as PNG bytes."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def jpeg_bytes(image: Image.Image) -> bytes:
    """``image`` as JPEG bytes."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=95)
    return buffer.getvalue()


def header_only_png(width: int, height: int) -> bytes:
    """A PNG of a few bytes whose header claims ``width`` x ``height`` pixels (``write_png_header_only``)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "header.png"
        write_png_header_only(path, width, height)
        return path.read_bytes()


def truncated(data: bytes) -> bytes:
    """``data`` cut in half: the header reads, the pixels do not."""
    return data[: len(data) // 2]


def _counterfactual(root: Path, record: dict[str, Any], size: tuple[int, int], seed: int) -> dict[str, Any]:
    path = f"data/images/counterfactuals/{record['id']}-{CF_NAME}.png"
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    pixels(size, seed).save(root / path)
    return {
        "image": path,
        "name": CF_NAME,
        "targets": list(record["spurious_types"][:1]),
        "description": f"the scene of {record['id']} in flat colours",
    }


def turned_release(root: Path, n: int = 4) -> Path:
    """``make_release`` whose item ``000000`` is a JPEG stored 48x32 and shown 32x48 (EXIF
    orientation 6); every item ships the counterfactual ``flat``, a PNG of the item's shown size."""
    make_release(root, n=n)
    records = read_records(root)
    (root / "data" / "images" / "000000.png").unlink()
    (root / "data" / "images" / "000000.jpg").write_bytes(turned_jpeg())
    records[0]["image"] = "data/images/000000.jpg"
    for i, record in enumerate(records):
        size = SHOWN if i == 0 else (24, 16)  # raw_fixtures' images are 24x16
        record["counterfactuals"] = [_counterfactual(root, record, size, seed=100 + i)]
    write_annotation(root, records)
    return root


def set_counterfactual(root: Path, index: int, data: bytes, suffix: str = ".png") -> None:
    """Replace the file of item ``index``'s counterfactual with ``data`` (under a name ending ``suffix``)."""
    records = read_records(root)
    entry = records[index]["counterfactuals"][0]
    (root / entry["image"]).unlink()
    entry["image"] = str(Path(entry["image"]).with_suffix(suffix))
    (root / entry["image"]).write_bytes(data)
    (root / "annotation.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
