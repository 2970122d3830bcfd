"""Read JSON strictly: a repeated key, an over-long number or too deep nesting is one clear error.

``json.load`` keeps the last of two equal keys without a word, raises ``ValueError`` for an
integer over Python's digit limit and ``RecursionError`` for deep nesting. Every reader of a user
file (annotation.json, run.json, results.json, samples.jsonl) goes through ``loads_strict`` so
those cases are refused with one line naming the file, the record and the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.files import MAX_JSON_BYTES, read_bytes_bounded, shown
from mmspubench.errors import MMSpuBenchError

_ID_KEYS = ("id", "qid", "question_id", "sample_id")


class DuplicateKeyError(ValueError):
    """Two equal keys in one JSON object."""

    def __init__(self, key: str, record: str | None) -> None:
        self.key, self.record = key, record
        where = f"record {record!r}: " if record is not None else ""
        super().__init__(f"{where}key {key!r} appears twice in one object; give each key once")


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # In an object keyed by id (annotation.json's dict form) the repeated key is the record.
            record = _record_label(pairs) or (key if isinstance(value, dict) else None)
            raise DuplicateKeyError(key, record)
        out[key] = value
    return out


def _record_label(pairs: list[tuple[str, Any]]) -> str | None:
    """The object's id, if it carries a short one; used to name the record in the error."""
    for key, value in pairs:
        if key.strip().lower() in _ID_KEYS and isinstance(value, str) and len(value) < 100:
            return value
        if key.strip().lower() in _ID_KEYS and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def loads_strict(text: str | bytes, where: str) -> Any:
    """Parse ``text``; any problem becomes an ``MMSpuBenchError`` starting with ``where``."""
    try:
        return json.loads(text, object_pairs_hook=_pairs_hook)
    except DuplicateKeyError as err:
        raise MMSpuBenchError(f"{where}: {err}") from None
    except RecursionError:
        raise MMSpuBenchError(f"{where}: not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError, over-long integers, bad UTF-8
        raise MMSpuBenchError(f"{where}: not valid JSON: {_one_line(err)}") from None


def load_file(
    path: Path,
    check: Callable[[Any], str | None] | None = None,
    *,
    limit: int = MAX_JSON_BYTES,
    what: str = "a JSON file",
) -> Any:
    """Read and parse the JSON file ``path`` (a regular file of at most ``limit`` bytes).

    A read error is one line too; ``check`` may return a message when the parsed value has the
    wrong shape.
    """
    text = read_bytes_bounded(path, limit, what)
    value = loads_strict(text, shown(path))
    problem = check(value) if check is not None else None
    if problem:
        raise MMSpuBenchError(f"{shown(path)}: {problem}")
    return value


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
