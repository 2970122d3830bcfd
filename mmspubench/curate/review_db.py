"""The review database: SQLite in WAL mode, one append-only table of reviews (the audit trail).

Every rating, decision, edit and comment is a new row with the annotator and the time; triggers
refuse ``UPDATE`` and ``DELETE``, so nothing is ever overwritten. Each operation opens its own
connection and writes in one ``BEGIN IMMEDIATE`` transaction, which makes concurrent annotators
(threads or processes) and restarts safe.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.errors import MMSpuBenchError

SCHEMA_VERSION = "1"
DECISIONS = ("accept", "reject")
RATINGS = (1, 2, 3, 4, 5)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reviews (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'reject')),
    edits TEXT NOT NULL,
    comment TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS reviews_append_only_update BEFORE UPDATE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are an append-only audit trail'); END;
CREATE TRIGGER IF NOT EXISTS reviews_append_only_delete BEFORE DELETE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are an append-only audit trail'); END;
"""
_COLUMNS = ("seq", "item_id", "annotator", "rating", "decision", "edits", "comment", "created_at")


@dataclass(frozen=True, slots=True)
class Review:
    """One row of the audit trail."""

    seq: int
    """Insertion order (strictly increasing)."""
    item_id: str
    annotator: str
    rating: int
    """1 (unusable) to 5 (excellent)."""
    decision: str
    """``accept`` or ``reject``."""
    edits: dict[str, Any]
    """Field -> new raw value, only the fields this review changed."""
    comment: str
    created_at: str
    """UTC time, ISO 8601."""


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    try:
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    except sqlite3.Error as err:
        raise MMSpuBenchError(f"{path}: cannot open the review database ({err})") from None
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        yield conn
    except sqlite3.DatabaseError as err:
        raise MMSpuBenchError(f"{path}: not a readable review database ({err})") from None
    finally:
        conn.close()


def open_db(path: Path, *, create: bool) -> Path:
    """Check (and with ``create``, initialise) the database at ``path``; returns ``path``."""
    path = Path(path)
    if not path.is_file():
        if not create:
            raise MMSpuBenchError(
                f"{path}: review database not found (written by `mmspubench curate review`)"
            )
        if not path.parent.is_dir():
            raise MMSpuBenchError(f"{path}: folder {path.parent} does not exist")
    with _connect(path) as conn:
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise MMSpuBenchError(f"{path}: the review database is corrupt ({check})")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "reviews" not in tables:
            raise MMSpuBenchError(f"{path}: an SQLite file without a reviews table; not a review database")
        if not tables and not create:
            raise MMSpuBenchError(f"{path}: an empty SQLite file; not a review database")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(_SCHEMA)
        columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(reviews)"))
        if columns != _COLUMNS:
            raise MMSpuBenchError(f"{path}: reviews table has columns {columns}; expected {_COLUMNS}")
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    return path


def add_review(
    path: Path, item_id: str, annotator: str, rating: int, decision: str, edits: dict[str, Any], comment: str
) -> Review:
    """Append one review; returns the stored row."""
    if rating not in RATINGS:
        raise MMSpuBenchError(f"rating {rating!r}: expected one of 1, 2, 3, 4, 5")
    if decision not in DECISIONS:
        raise MMSpuBenchError(f"decision {decision!r}: expected accept or reject")
    if not annotator.strip():
        raise MMSpuBenchError("annotator name is empty; enter your name first")
    now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    values = (
        item_id,
        annotator.strip(),
        rating,
        decision,
        json.dumps(edits, ensure_ascii=False),
        comment,
        now,
    )
    with _connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        cursor = conn.execute(
            "INSERT INTO reviews (item_id, annotator, rating, decision, edits, comment, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            values,
        )
        conn.execute("COMMIT")
        seq = int(cursor.lastrowid or 0)
    return Review(seq, item_id, annotator.strip(), rating, decision, edits, comment, now)


def all_reviews(path: Path) -> list[Review]:
    """Every review, in insertion order."""
    with _connect(path) as conn:
        rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM reviews ORDER BY seq").fetchall()
    out = []
    for seq, item_id, annotator, rating, decision, edits, comment, created_at in rows:
        parsed = loads_strict(edits, f"{path}: review {seq}: edits")
        if not isinstance(parsed, dict):
            raise MMSpuBenchError(f"{path}: review {seq}: edits are not a JSON object")
        out.append(Review(seq, item_id, annotator, rating, decision, parsed, comment, created_at))
    return out


def latest_per_annotator(reviews: list[Review]) -> dict[str, dict[str, Review]]:
    """Item id -> annotator -> that annotator's latest review of the item (a later one supersedes)."""
    latest: dict[str, dict[str, Review]] = {}
    for review in reviews:
        latest.setdefault(review.item_id, {})[review.annotator] = review
    return latest
