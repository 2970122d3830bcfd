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


CARD = """---
dataset_info:
  features:
  - name: id
    dtype: string
  download_size: {download}
  dataset_size: {size}
  splits:
  - name: test
    num_bytes: {size}
    num_examples: 5
---
# Card
"""


def test_the_card_counts_without_its_byte_sizes(tmp_path: Path) -> None:
    """The card keeps the encoded files' byte sizes (``datasets`` keys its cache of a local folder on
    ``dataset_info``), while the hash leaves them out: they vary with the encoder."""
    hashes = []
    for k, (download, size) in enumerate([(1000, 2000), (1234, 5678)]):
        folder = tmp_path / f"f{k}"
        folder.mkdir()
        (folder / "README.md").write_text(CARD.format(download=download, size=size))
        hashes.append(content_hash(folder))
    assert hashes[0] == hashes[1]
    (tmp_path / "f1" / "README.md").write_text(
        CARD.format(download=1, size=2).replace("num_examples: 5", "num_examples: 6")
    )
    assert content_hash(tmp_path / "f1") != hashes[0]
    # Only the card at the top counts that way: a README.md elsewhere counts by its bytes.
    for k, size in enumerate((1, 2)):
        (tmp_path / f"f{k}" / "notes").mkdir()
        (tmp_path / f"f{k}" / "notes" / "README.md").write_text(f"dataset_size: {size}\n")
    assert content_hash(tmp_path / "f0") != content_hash(tmp_path / "f1")


def test_two_builds_of_one_shape_load_apart_with_datasets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two built folders of the same name and shape load as their own rows through ``datasets``."""
    import datasets
    from mmspubench.cli import main

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    ids = []
    for seed in (1, 2):
        release, repo = tmp_path / f"release{seed}", tmp_path / f"b{seed}" / "repo"
        assert (
            main(["synth", "--out", str(release), "--n", "3", "--seed", str(seed), "--image-size", "32"]) == 0
        )
        annotation = json.loads((release / "annotation.json").read_text())
        for record in annotation:  # same shape, other ids: the rows tell the builds apart
            record["id"] = f"{seed}{record['id']}"
        (release / "annotation.json").write_text(json.dumps(annotation))
        assert main(["build", "--source", str(release), "--out", str(repo)]) == 0
        ids.append(sorted(datasets.load_dataset(str(repo), split="test")["id"]))
    assert (
        ids[0] != ids[1] and all(i.startswith("1") for i in ids[0]) and all(i.startswith("2") for i in ids[1])
    )
