"""Read a user's file safely: regular files only, under a size limit, never hanging on a FIFO.

A path a user names may be a named pipe (opening it blocks until a writer comes), a symlink to
``/dev/zero`` (reading never ends), a directory, or a regular file far larger than any real one.
Every reader of a user file opens it through ``open_regular``: the file is opened with
``O_NONBLOCK`` (a FIFO opens at once instead of blocking), then ``fstat`` on the opened descriptor
(no race with a rename) must show a regular file no larger than the limit for that kind of file.
Every refusal is one ``MMSpuBenchError`` line naming the file and the limit.

The limits (far above the largest real file of each kind):

- ``MAX_JSON_BYTES`` (64 MiB): ``results.json``, ``run.json``, curate's ``selection.json`` and
  state files, a model folder's JSON configs.
- ``MAX_ANNOTATION_BYTES`` (256 MiB): a raw release's ``annotation.json`` (about 580 bytes a
  record: over 450,000 records, some 190 times a 2,400-item release).
- ``MAX_JSONL_BYTES`` (256 MiB) in all and ``MAX_JSONL_LINE_BYTES`` (8 MiB) a line:
  ``samples.jsonl``, ``candidates.jsonl``, ``reviews.jsonl`` (a 2,400-item run is about 5 MB).
- ``MAX_IMAGE_BYTES`` (256 MiB): an image file (the pixel limit applies as well).
- ``MAX_TEXT_BYTES`` (16 MiB): other text files (a cached Hub ref, a card template).
- ``MAX_DATASET_FILE_BYTES`` (16 GiB): any one file of a dataset folder whose content is hashed
  (a Parquet shard is at most 500 MiB by default); it is read up to the size it reports, never
  further.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from mmspubench.errors import MMSpuBenchError

MiB = 2**20
MAX_JSON_BYTES = 64 * MiB
"""Largest JSON file read whole (results.json, run.json, selection.json, model configs)."""
MAX_ANNOTATION_BYTES = 256 * MiB
"""Largest raw ``annotation.json`` that ``build`` reads."""
MAX_JSONL_BYTES = 256 * MiB
"""Largest JSON-lines file (samples.jsonl, candidates.jsonl, reviews.jsonl) in all."""
MAX_JSONL_LINE_BYTES = 8 * MiB
"""Largest single line of a JSON-lines file."""
MAX_IMAGE_BYTES = 256 * MiB
"""Largest image file opened for decoding."""
MAX_TEXT_BYTES = 16 * MiB
"""Largest other text file."""
MAX_DATASET_FILE_BYTES = 16 * 1024 * MiB
"""Largest single file of a dataset folder that is hashed to pin a run's data."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def shown(path: str | Path) -> str:
    """``path`` for an error line: as is when printable, else its ``repr`` (no raw control characters)."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def size_text(size: int) -> str:
    """A byte count for people: ``512 MiB`` for whole MiB, else the exact number of bytes."""
    return f"{size // MiB} MiB" if size >= MiB and size % MiB == 0 else f"{size} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | Path, limit: int, what: str) -> BinaryIO:
    """Open ``path`` for binary reading: it must be a regular file of at most ``limit`` bytes.

    ``what`` names the kind of file in the error line (``"results.json"``, ``"image"``...).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise _read_error(path, what, err) from None
    except ValueError:  # a NUL byte in the name
        raise MMSpuBenchError(f"{shown(path)}: cannot read {what} (the name holds a NUL byte)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MMSpuBenchError(
                f"{shown(path)}: is {_kind(info.st_mode)}; expected {what} as a regular file"
            )
        if info.st_size > limit:
            raise MMSpuBenchError(f"{shown(path)}: {_over(info.st_size, limit, what)}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _over(size: int, limit: int, what: str) -> str:
    return f"{size_text(size)} is over the limit of {size_text(limit)} for {what}; refusing to read it"


def _read_error(path: str | Path, what: str, err: OSError) -> MMSpuBenchError:
    return MMSpuBenchError(f"{shown(path)}: cannot read {what} ({err.strerror or type(err).__name__})")


def read_bytes_bounded(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``, also if it grows while read)."""
    with open_regular(path, limit, what) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as err:  # EIO, or EISDIR on an odd file system
            raise _read_error(path, what, err) from None
    if len(data) > limit:  # it grew while read, or it does not tell its size (``/proc``)
        raise MMSpuBenchError(
            f"{shown(path)}: holds more than the limit of {size_text(limit)} for {what}; refusing to read it"
        )
    return data


def read_text_bounded(path: str | Path, limit: int, what: str) -> str:
    """The UTF-8 text of ``path`` (a leading BOM dropped); invalid UTF-8 is one error line."""
    data = read_bytes_bounded(path, limit, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise MMSpuBenchError(
            f"{shown(path)}: {what} is not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start})"
        ) from None


def iter_lines_bounded(
    path: str | Path,
    what: str,
    *,
    limit: int = MAX_JSONL_BYTES,
    line_limit: int = MAX_JSONL_LINE_BYTES,
) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of ``path``, newline kept, each line at most ``line_limit`` bytes.

    The file is read line by line, so a file of one huge line is refused after ``line_limit``
    bytes instead of being read whole.
    """
    with open_regular(path, limit, what) as handle:
        total = 0
        number = 0
        while True:
            try:
                line = handle.readline(line_limit + 1)
            except OSError as err:
                raise _read_error(path, what, err) from None
            if not line:
                return
            number += 1
            total += len(line)
            if len(line) > line_limit:
                raise MMSpuBenchError(
                    f"{shown(path)}: line {number}: over the limit of {size_text(line_limit)} a line "
                    f"for {what}; refusing to read it"
                )
            if total > limit:
                raise MMSpuBenchError(f"{shown(path)}: {_over(total, limit, what)}")
            yield number, line
