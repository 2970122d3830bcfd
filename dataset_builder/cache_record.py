"""What a folder of ``$MMSPUBENCH_CACHE`` was when it was made, checked before it is used again.

A cached build of a raw release (Parquet files) and a cached release copy (plain files copied out
of the Hub cache) are reused by later loads. Each holds a record, ``.mmspubench-cache.json``,
written once the folder is complete: its content hash (:func:`~mmspubench.dataset_builder.load.content_hash`,
which skips dot files such as the record itself) and what it was made from. Before a cached folder
is used, its content is hashed again and both are compared with the record: an edited, truncated
or half-written folder, or one made from other inputs (a Hub snapshot that was partial then), is
rebuilt instead of being read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.files import MAX_JSON_BYTES, read_text_bounded
from mmspubench.errors import MMSpuBenchError

RECORD_NAME = ".mmspubench-cache.json"
"""The record's file name inside a cached folder (a dot file: not part of the content hash)."""


def write_record(folder: Path, made_from: Mapping[str, Any]) -> str:
    """Record ``folder``'s content hash and ``made_from``; returns the content hash."""
    from mmspubench.dataset_builder.load import content_hash

    digest = content_hash(folder)
    text = json.dumps({"content_hash": digest, "made_from": dict(made_from)}, sort_keys=True)
    (folder / RECORD_NAME).write_text(text + "\n", encoding="utf-8")
    return digest


def verified_hash(folder: Path, made_from: Mapping[str, Any]) -> str | None:
    """``folder``'s content hash when it is the complete folder recorded as made from ``made_from``,
    else ``None`` (no folder, no record, other inputs, or content changed since)."""
    from mmspubench.dataset_builder.load import content_hash

    path = folder / RECORD_NAME
    if not path.is_file():
        return None
    try:
        record = json.loads(read_text_bounded(path, MAX_JSON_BYTES, "a cache record"))
    except (ValueError, MMSpuBenchError):
        return None
    if not isinstance(record, dict) or record.get("made_from") != json.loads(json.dumps(dict(made_from))):
        return None
    try:
        digest = content_hash(folder)
    except MMSpuBenchError:  # a file replaced by something that is not a regular file
        return None
    return digest if digest == record.get("content_hash") else None
