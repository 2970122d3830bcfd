"""The content hash pins content, not encoding: PNG and Parquet files count by what they decode to."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mmspubench.dataset_builder.load import content_hash
from PIL import Image, PngImagePlugin


def _picture() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8), "RGB")


def _png(image: Image.Image, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", **options)
    return buffer.getvalue()


def _release(folder: Path, png: bytes) -> Path:
    (folder / "data" / "images").mkdir(parents=True, exist_ok=True)
    (folder / "annotation.json").write_text("[]\n")
    (folder / "data" / "images" / "000000.png").write_bytes(png)
    return folder


def test_a_png_counts_by_its_pixels_not_its_encoding(tmp_path: Path) -> None:
    picture = _picture()
    plain = _png(picture, compress_level=1)
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "another encoder")
    other = _png(picture, compress_level=9, optimize=True, pnginfo=info)
    assert plain != other
    first = content_hash(_release(tmp_path / "a", plain))
    assert content_hash(_release(tmp_path / "b", other)) == first
    changed = picture.copy()
    changed.putpixel((5, 7), tuple((v + 1) % 256 for v in picture.getpixel((5, 7))))  # type: ignore[union-attr]
    assert content_hash(_release(tmp_path / "c", _png(changed, compress_level=1))) != first
    # The same pixels in another mode, or a palette image, are other content.
    assert content_hash(_release(tmp_path / "d", _png(picture.convert("RGBA")))) != first


def test_a_file_named_png_that_does_not_decode_counts_by_its_bytes(tmp_path: Path) -> None:
    truncated = _png(_picture())[:-40]
    first = content_hash(_release(tmp_path / "a", truncated))
    assert content_hash(_release(tmp_path / "b", truncated)) == first
    assert content_hash(_release(tmp_path / "c", truncated[:-1])) != first
    assert content_hash(_release(tmp_path / "d", b"not a png")) != first


def _table(images: list[bytes], answers: list[str]) -> pa.Table:
    uri = [f"data:image/png;base64,{base64.b64encode(b).decode('ascii')}" for b in images]
    table = pa.table(
        {
            "image": [{"bytes": b, "path": f"{i}.png"} for i, b in enumerate(images)],
            "uri": uri,
            "answer": answers,
        }
    )
    features = {"info": {"features": {"answer": {"dtype": "string", "_type": "Value"}}}}
    return table.replace_schema_metadata({"huggingface": json.dumps(features)})


def _built(folder: Path, table: pa.Table, **options: object) -> Path:
    (folder / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "data" / "test-00000-of-00001.parquet", **options)
    (folder / "README.md").write_text("card\n")
    return folder


def test_a_parquet_shard_counts_by_its_rows_images_decoded(tmp_path: Path) -> None:
    picture = _picture()
    table = _table([_png(picture, compress_level=1)] * 3, ["A", "B", "C"])
    first = content_hash(_built(tmp_path / "a", table, compression="snappy", row_group_size=2))
    # Another compression, row grouping and PNG encoding of the same pixels: the same content.
    other = _table([_png(picture, compress_level=9)] * 3, ["A", "B", "C"])
    assert content_hash(_built(tmp_path / "b", other, compression="zstd", row_group_size=3)) == first
    # One changed answer, or one changed pixel in a data URI, is other content.
    assert content_hash(_built(tmp_path / "c", _table([_png(picture)] * 3, ["A", "B", "D"]))) != first
    changed = picture.copy()
    changed.putpixel((0, 0), (1, 2, 3))
    mixed = _table([_png(picture)] * 2 + [_png(changed)], ["A", "B", "C"])
    assert content_hash(_built(tmp_path / "d", mixed)) != first


@pytest.mark.parametrize("payload", [b"", b"PAR1 not really"])
def test_a_broken_parquet_file_counts_by_its_bytes(tmp_path: Path, payload: bytes) -> None:
    (tmp_path / "x.parquet").write_bytes(payload)
    first = content_hash(tmp_path)
    (tmp_path / "x.parquet").write_bytes(payload + b"!")
    assert content_hash(tmp_path) != first
