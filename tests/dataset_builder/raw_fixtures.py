"""Small raw releases generated in ``tmp_path``: PNG and JPEG images drawn with PIL + annotation.json."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

TYPE_CYCLE = (
    ["background"],
    ["BG", "Ori."],
    ["Texture and Noise"],
    ["co_occurring_objects", "relative_size"],
    ["Col."],
    ["orientation"],
    ["LS", "PA"],
    ["Shape"],
)
CANONICAL_TYPES = {
    "background": "background",
    "BG": "background",
    "Ori.": "orientation",
    "Texture and Noise": "texture_noise",
    "co_occurring_objects": "co_occurring_objects",
    "relative_size": "relative_size",
    "Col.": "colorization",
    "orientation": "orientation",
    "LS": "lighting_shadows",
    "PA": "perspective_angle",
    "Shape": "shape",
}
"""Hand-written canonical name of every spelling used in ``TYPE_CYCLE``."""
SOURCE_CYCLE = ("ObjectNet", "ImageNet-R", "ImageNet-Sketch", "ImageNet-A", "ImageNet-C", "synthetic")


def make_image(path: Path, seed: int, size: tuple[int, int] = (24, 16)) -> None:
    """A small random RGB image; the format follows the suffix (PNG or JPEG)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, quality=90) if path.suffix.lower() in {
        ".jpg",
        ".jpeg",
    } else Image.fromarray(pixels).save(path)


def make_record(
    i: int, *, prefixed: bool = False, with_image: bool = True, suffix: str = ".png"
) -> dict[str, Any]:
    """One raw record; even ids name their image, odd ones are found by id."""
    options = [f"object {i} option {k}" for k in range(4)]
    if prefixed:
        options = [f"{letter}. {text}" for letter, text in zip("ABCD", options, strict=True)]
    record: dict[str, Any] = {
        "id": f"{i:06d}",
        "question": f"What is the object in the {['top', 'left', 'centre'][i % 3]} of image {i}?",
        "options": options,
        "answer": "ABCD"[i % 4],
        "class_name": f"class {i % 5}",
        "core_attributes": [f"core {i} {k}" for k in range(1 + i % 5)],
        "spurious_attributes": [f"spurious {i} {k}" for k in range(1 + (i + 2) % 5)],
        "spurious_types": list(TYPE_CYCLE[i % len(TYPE_CYCLE)]),
        "source": SOURCE_CYCLE[i % len(SOURCE_CYCLE)],
    }
    if with_image:
        record["image"] = f"data/images/{i:06d}{suffix}"
    return record


def make_release(root: Path, n: int = 8, *, as_dict: bool = False) -> Path:
    """A valid raw release of ``n`` items: PNG and JPEG mixed, named and found-by-id images mixed."""
    records = []
    for i in range(n):
        suffix = ".jpg" if i % 3 == 1 else ".png"
        named = i % 2 == 0
        records.append(make_record(i, prefixed=i % 4 == 1, with_image=named, suffix=suffix))
        make_image(root / "data" / "images" / f"{i:06d}{suffix}", seed=i)
    write_annotation(root, records, as_dict=as_dict)
    return root


def write_annotation(root: Path, records: list[dict[str, Any]], *, as_dict: bool = False) -> None:
    """Write ``annotation.json`` as a list, or as a dict keyed by id (``id`` removed from values)."""
    root.mkdir(parents=True, exist_ok=True)
    data: Any = records
    if as_dict:
        data = {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in records}
    (root / "annotation.json").write_text(json.dumps(data, indent=1), encoding="utf-8")


def read_records(root: Path) -> list[dict[str, Any]]:
    """The records of a list-form ``annotation.json``."""
    data: list[dict[str, Any]] = json.loads((root / "annotation.json").read_text(encoding="utf-8"))
    return data


def write_png_header_only(path: Path, width: int, height: int) -> None:
    """A tiny PNG whose header claims ``width`` x ``height`` pixels (a decompression-bomb probe)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )
