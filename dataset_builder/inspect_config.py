"""The ``inspect`` config of a built repo: the rows inspect-ai's Hub loader can read.

inspect-ai's loader (``inspect_ai/_eval/task/hf.py``) takes an image only as a string (a data
URI), a target as a column value and choices as a list column. So beside the default config (an
``Image`` column and ClassLabel answers), ``build`` writes ``inspect/test-*.parquet`` with the same
ids, texts and annotations, the answer as its letter and the image as a
``data:image/png|jpeg;base64,`` string: the file's bytes, or, for a file whose EXIF orientation
turns its pixels, the PNG of the pixels ``mmspubench eval`` shows (``orientation.as_shown``). Rows
are written in row groups of a bounded size, so memory does not grow with the number of items. On the bundled synthetic release (90 items, 224 px PNGs,
358,298 image bytes) the copy costs 339,454 bytes with zstd (489,864 with snappy), against
372,476 bytes for the default config.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.eval_yaml import INSPECT_CONFIG
from mmspubench.dataset_builder.orientation import as_shown
from mmspubench.dataset_builder.schema import Item

ROWS_PER_GROUP = 100
"""Rows per Parquet row group (bounds the image bytes held at once)."""
SHARD_NAME = "test-00000-of-00001.parquet"
_LIST_FIELDS = ("options", "core_attributes", "spurious_attributes", "spurious_types")
_TEXT_FIELDS = ("id", "question", "answer", "image", "class_name", "source")


def data_uri(path: Path) -> str:
    """The image file as a ``data:`` URI of the pixels eval shows, its type read from the bytes (PNG
    or JPEG)."""
    data = as_shown(path.read_bytes())
    mime = "image/png" if data.startswith(b"\x89PNG\r\n\x1a\n") else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def inspect_row(record: Item) -> dict[str, Any]:
    """One row of the ``inspect`` config."""
    return {
        "id": record.id,
        "question": record.question,
        "options": list(record.options),
        "answer": record.answer,
        "image": data_uri(Path(record.image)),
        "class_name": record.class_name,
        "core_attributes": list(record.core_attributes),
        "spurious_attributes": list(record.spurious_attributes),
        "spurious_types": list(record.spurious_types),
        "source": record.source,
    }


def write_inspect_config(records: Sequence[Item], repo: Path) -> Path:
    """Write ``repo/inspect/test-00000-of-00001.parquet``; return its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [(name, pa.list_(pa.string()) if name in _LIST_FIELDS else pa.string()) for name in inspect_columns()]
    )
    target = repo / INSPECT_CONFIG / SHARD_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    # zstd wins back most of base64's 4/3 (snappy, the default, keeps all of it).
    with pq.ParquetWriter(target, schema, compression="zstd") as writer:
        for start in range(0, len(records), ROWS_PER_GROUP):
            rows = [inspect_row(r) for r in records[start : start + ROWS_PER_GROUP]]
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
    return target


def inspect_columns() -> tuple[str, ...]:
    """The columns of the ``inspect`` config, in order."""
    return (
        "id",
        "question",
        "options",
        "answer",
        "image",
        "class_name",
        "core_attributes",
        "spurious_attributes",
        "spurious_types",
        "source",
    )


def is_text_column(name: str) -> bool:
    """Whether the ``inspect`` config stores ``name`` as one string (else a list of strings)."""
    return name in _TEXT_FIELDS
