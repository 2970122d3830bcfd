"""The error type every user-facing failure is reported with."""

from __future__ import annotations


class MMSpuBenchError(Exception):
    """A failure caused by the user's input or environment, reported as one line, no traceback.

    The message names what is wrong precisely: the file, the record id, the field, the bad value
    and what was expected.
    """


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with what it leaves behind and how to go on (``eval``: the items kept, the rerun that
    resumes); the command line prints ``interrupted; <message>``."""


def record_error(file: str, record_id: str | None, field: str | None, message: str) -> MMSpuBenchError:
    """Build an error naming the file, record and field: ``file: record 'id': field 'f': message``."""
    parts = [str(file)]
    if record_id is not None:
        parts.append(f"record {record_id!r}")
    if field is not None:
        parts.append(f"field {field!r}")
    return MMSpuBenchError(": ".join([*parts, message]))


def first_line(err: BaseException, limit: int | None = None) -> str:
    """An exception's message cut to its first line (and to ``limit`` characters): errors are one line."""
    text = str(err).strip()
    return text.splitlines()[0][:limit] if text else type(err).__name__
