"""The content hash of a dataset folder: what a result file records to pin its data.

It hashes what the files hold, not how they were encoded, so the same release gives the same hash
on every machine, whichever Pillow, zlib or pyarrow wrote it (PNG and Parquet bytes of the same
pixels and rows differ between encoder builds and versions):

- a ``.png`` file: its decoded mode, size, palette, transparency, ICC profile and pixels (PNG
  decoding is exact); text and gamma chunks, compression level, filters and chunk layout do not
  count;
- a ``.parquet`` file: its column names, its ``huggingface`` metadata (the features, as parsed
  JSON) and its rows in order; an image cell (PNG bytes, or a ``data:image/png;base64,`` string
  as the ``inspect`` config stores it) counts by its decoded pixels as above;
- the top-level ``README.md`` (the card): its bytes less the lines of its ``dataset_info`` that
  give the encoded files' byte sizes (``download_size``, ``dataset_size``, ``num_bytes``). The card
  keeps them: ``datasets`` keys its cache of a local folder on the card's ``dataset_info``, so two
  builds of the same shape told apart by nothing else would share one cache entry;
- every other file, and a PNG or Parquet file that does not decode as one: its bytes.

Each file enters with its relative path, in sorted order; dot files and dot folders (the cache
record) are skipped. Every file is opened as a regular file of bounded size and read no further
than the size it reports (a symlink to ``/proc/self/pagemap`` reads forever otherwise).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mmspubench.dataset_builder.files import MAX_DATASET_FILE_BYTES, MAX_IMAGE_BYTES, open_regular
from mmspubench.dataset_builder.images import MAX_IMAGE_PIXELS

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_URI = "data:image/png;base64,"
_CHUNK = 1 << 20
_BATCH_ROWS = 64
_CARD = "README.md"
_CARD_SIZE_LINE = re.compile(
    rb"^[ \t-]*(?:download_size|dataset_size|num_bytes): *[0-9]+[ \t]*\r?$", re.MULTILINE
)
"""A card's byte-size line: the size of the encoded files, which varies with their encoder."""


def content_hash(folder: Path, salt: str) -> str:
    """SHA-256 of ``salt`` and every file of ``folder``: relative path, then content as the module
    docstring says."""
    digest = hashlib.sha256(f"{salt}\n".encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        digest.update(rel.as_posix().encode() + b"\0")
        with open_regular(path, MAX_DATASET_FILE_BYTES, "a dataset file") as fh:
            size = os.fstat(fh.fileno()).st_size
            suffix = path.suffix.lower()
            canonical = None
            if suffix == ".png" and size <= MAX_IMAGE_BYTES:
                canonical = png_content(_read(fh, size))
            elif suffix == ".parquet" and size > 0:
                canonical = _parquet_content(fh)
            elif rel.as_posix() == _CARD:
                canonical = card_content(_read(fh, size))
            if canonical is not None:
                digest.update(canonical)
            else:
                fh.seek(0)
                digest.update(b"bytes\0")
                for chunk in _chunks(fh, size):
                    digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def _read(fh: IO[bytes], size: int) -> bytes:
    return b"".join(_chunks(fh, size))


def _chunks(fh: IO[bytes], size: int) -> Iterator[bytes]:
    """The file's bytes, never past ``size`` (what the file reported when it was opened)."""
    left = size
    while left > 0 and (chunk := fh.read(min(_CHUNK, left))):
        yield chunk
        left -= len(chunk)


def card_content(data: bytes) -> bytes:
    """The card ``data`` less its byte-size lines (each removed line leaves a marker behind)."""
    return b"card\0" + _CARD_SIZE_LINE.sub(b"<size>", data)


def png_content(data: bytes) -> bytes | None:
    """Digest of the decoded PNG ``data`` (mode, size, palette, transparency, ICC, pixels), or
    ``None`` when it is not a single-frame PNG that decodes within the pixel limit."""
    from PIL import Image

    if not data.startswith(PNG_SIGNATURE):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=["PNG"]) as im:
                if getattr(im, "n_frames", 1) != 1 or im.width * im.height > MAX_IMAGE_PIXELS:
                    return None
                im.load()
                header = {
                    "mode": im.mode,
                    "size": list(im.size),
                    "palette": im.getpalette() if im.palette is not None else None,
                    "transparency": repr(im.info.get("transparency")),
                    "icc": hashlib.sha256(im.info.get("icc_profile") or b"").hexdigest(),
                }
                pixels = hashlib.sha256(im.tobytes()).hexdigest()
    # A truncated or corrupt PNG: OSError (truncated data), SyntaxError (broken chunk), EOFError.
    except (
        OSError,
        ValueError,
        SyntaxError,
        EOFError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ):
        return None
    return b"png\0" + json.dumps(header, sort_keys=True).encode() + b"\0" + pixels.encode()


def _parquet_content(fh: IO[bytes]) -> bytes | None:
    """Digest of the Parquet file's columns, features metadata and rows, or ``None`` if unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    digest = hashlib.sha256()
    try:
        with pq.ParquetFile(fh) as parquet:
            schema = parquet.schema_arrow
            meta = (schema.metadata or {}).get(b"huggingface")
            header = {"columns": schema.names, "huggingface": json.loads(meta) if meta else None}
            digest.update(json.dumps(header, sort_keys=True).encode() + b"\0")
            for batch in parquet.iter_batches(batch_size=_BATCH_ROWS):
                for row in batch.to_pylist():
                    digest.update(_value_bytes(row) + b"\n")
    except (OSError, ValueError, pa.ArrowException):
        return None
    return b"parquet\0" + digest.hexdigest().encode()


def _value_bytes(value: Any) -> bytes:
    """A canonical encoding of one Parquet cell (decoded to Python), images by their pixels."""
    if isinstance(value, bytes):
        return b"b:" + (png_content(value) or hashlib.sha256(value).hexdigest().encode())
    if isinstance(value, str) and value.startswith(_PNG_URI):
        try:
            decoded = base64.b64decode(value[len(_PNG_URI) :], validate=True)
        except ValueError:
            decoded = None
        canonical = png_content(decoded) if decoded is not None else None
        if canonical is not None:
            return b"u:" + canonical
    if isinstance(value, dict):
        return (
            b"{" + b",".join(json.dumps(k).encode() + b":" + _value_bytes(v) for k, v in value.items()) + b"}"
        )
    if isinstance(value, list):
        return b"[" + b",".join(_value_bytes(v) for v in value) + b"]"
    return json.dumps(value, default=repr).encode()
