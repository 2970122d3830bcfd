"""The review database: SQLite in WAL mode, one append-only table of reviews (the audit trail).

Every rating, decision, edit and comment is a new row with the annotator and the time; triggers
refuse ``UPDATE`` and ``DELETE``, so nothing is ever overwritten. Each operation opens its own
connection and writes in one ``BEGIN IMMEDIATE`` transaction, which makes concurrent annotators
(threads or processes) and restarts safe. The ``meta`` table records the draft the reviews belong
to (:mod:`mmspubench.curate.draft_identity`); its rows cannot be changed either.

Rows are checked when read, as any input is: a database written by other means (a forged row, a
table without the ``CHECK`` constraints) is refused with one line naming the review and field.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mmspubench.curate.draft_identity import DraftIdentity
from mmspubench.curate.names import name_key, normalise_name
from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.errors import MMSpuBenchError

SCHEMA_VERSION = "2"
DECISIONS = ("accept", "reject")
RATINGS = (1, 2, 3, 4, 5)
MAX_COMMENT = 2000
"""Longest comment, in characters."""
MAX_EDITS_JSON = 20_000
"""Longest stored edits (JSON text) of one review."""

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);""",
    """CREATE TABLE IF NOT EXISTS reviews (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'reject')),
    edits TEXT NOT NULL,
    comment TEXT NOT NULL,
    created_at TEXT NOT NULL
);""",
    """CREATE TRIGGER IF NOT EXISTS reviews_append_only_update BEFORE UPDATE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are an append-only audit trail'); END;""",
    """CREATE TRIGGER IF NOT EXISTS reviews_append_only_delete BEFORE DELETE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are an append-only audit trail'); END;""",
    """CREATE TRIGGER IF NOT EXISTS meta_append_only_update BEFORE UPDATE ON meta
BEGIN SELECT RAISE(ABORT, 'the recorded draft cannot be changed'); END;""",
    """CREATE TRIGGER IF NOT EXISTS meta_append_only_delete BEFORE DELETE ON meta
BEGIN SELECT RAISE(ABORT, 'the recorded draft cannot be changed'); END;""",
)
"""The statements that create the tables and triggers (run in one transaction)."""
_COLUMNS = ("seq", "item_id", "annotator", "rating", "decision", "edits", "comment", "created_at")
_DRAFT_KEYS = ("draft_id", "draft_digest", "draft_folder")
_BUSY_SECONDS = 30.0
"""How long a step waits for another server's lock on the database."""


@dataclass(frozen=True, slots=True)
class Review:
    """One row of the audit trail."""

    seq: int
    """Insertion order (strictly increasing)."""
    item_id: str
    annotator: str
    """The annotator's normalised name (:func:`mmspubench.curate.names.normalise_name`)."""
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
        conn = sqlite3.connect(str(path), timeout=_BUSY_SECONDS, isolation_level=None)
    except sqlite3.Error as err:
        raise MMSpuBenchError(f"{path}: cannot open the review database ({err})") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_SECONDS * 1000)}")
        yield conn
    except sqlite3.DatabaseError as err:
        raise MMSpuBenchError(f"{path}: not a readable review database ({err})") from None
    finally:
        conn.close()


def open_db(path: Path, *, create: bool) -> Path:
    """Check (and with ``create``, initialise) the database at ``path``; returns ``path``."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not path.is_file():
        raise MMSpuBenchError(f"{path}: not a regular file (a folder, a FIFO, a device or a broken link)")
    if not path.is_file():
        if not create:
            raise MMSpuBenchError(
                f"{path}: review database not found (written by `mmspubench curate review`)"
            )
        if not path.parent.is_dir():
            raise MMSpuBenchError(f"{path}: folder {path.parent} does not exist")
    # SQLite answers "database is locked" at once, without waiting for the busy timeout, where
    # waiting could deadlock: a check while another server turns a new file into WAL, say. Every
    # step below is idempotent, so the whole opening is tried again until the busy timeout is spent.
    deadline = time.monotonic() + _BUSY_SECONDS
    while True:
        with _connect(path) as conn:
            try:
                _initialise(conn, path, create)
                return path
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
        time.sleep(0.05)


def _initialise(conn: sqlite3.Connection, path: Path, create: bool) -> None:
    check = conn.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise MMSpuBenchError(f"{path}: the review database is corrupt ({check})")
    conn.execute("BEGIN IMMEDIATE")  # two servers creating one new file: one creates, one sees it
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables and "reviews" not in tables:
        raise MMSpuBenchError(f"{path}: an SQLite file without a reviews table; not a review database")
    if not tables and not create:
        raise MMSpuBenchError(f"{path}: an empty SQLite file; not a review database")
    for statement in _SCHEMA:
        conn.execute(statement)
    columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(reviews)"))
    if columns != _COLUMNS:
        raise MMSpuBenchError(f"{path}: reviews table has columns {columns}; expected {_COLUMNS}")
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")


def add_review(
    path: Path, item_id: str, annotator: str, rating: int, decision: str, edits: dict[str, Any], comment: str
) -> Review:
    """Append one review; returns the stored row (the annotator's name normalised)."""
    name = normalise_name(annotator)
    problem = _row_problem(item_id, name, rating, decision, comment)
    if problem is not None:
        raise MMSpuBenchError(problem)
    text = json.dumps(edits, ensure_ascii=False)
    if len(text) > MAX_EDITS_JSON:
        raise MMSpuBenchError(f"the edits are {len(text)} characters of JSON; at most {MAX_EDITS_JSON}")
    now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    with _connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        cursor = conn.execute(
            "INSERT INTO reviews (item_id, annotator, rating, decision, edits, comment, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (item_id, name, rating, decision, text, comment, now),
        )
        conn.execute("COMMIT")
        seq = int(cursor.lastrowid or 0)
    return Review(seq, item_id, name, rating, decision, edits, comment, now)


def _row_problem(item_id: Any, annotator: str, rating: Any, decision: Any, comment: Any) -> str | None:
    """Why these values are not a review (``annotator`` already normalised), or ``None``."""
    if not isinstance(item_id, str) or not item_id:
        return f"item id {item_id!r}: expected a non-empty text"
    if isinstance(rating, bool) or rating not in RATINGS or not isinstance(rating, int):
        return f"rating {rating!r}: expected one of 1, 2, 3, 4, 5"
    if decision not in DECISIONS:
        return f"decision {decision!r}: expected accept or reject"
    if not isinstance(comment, str):
        return f"comment {comment!r}: expected a text"
    if len(comment) > MAX_COMMENT:
        return f"the comment has {len(comment)} characters; at most {MAX_COMMENT} are allowed"
    return None


def all_reviews(path: Path) -> list[Review]:
    """Every review, in insertion order, each row checked as input."""
    with _connect(path) as conn:
        rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM reviews ORDER BY seq").fetchall()
    return [_read_row(path, row) for row in rows]


def _read_row(path: Path, row: tuple[Any, ...]) -> Review:
    seq, item_id, annotator, rating, decision, edits, comment, created_at = row
    where = f"{path}: review {seq}"
    try:
        name = normalise_name(annotator)
    except MMSpuBenchError as err:
        raise MMSpuBenchError(f"{where}: field 'annotator': {err}") from None
    problem = _row_problem(item_id, name, rating, decision, comment)
    if problem is None and not isinstance(created_at, str):
        problem = f"created_at {created_at!r}: expected a text"
    if problem is None and not isinstance(edits, str):
        problem = f"edits {edits!r}: expected JSON text"
    if problem is not None:
        raise MMSpuBenchError(f"{where}: {problem}; not a row `curate review` writes")
    parsed = loads_strict(edits, f"{where}: edits")
    if not isinstance(parsed, dict):
        raise MMSpuBenchError(f"{where}: edits are not a JSON object")
    return Review(int(seq), item_id, name, rating, decision, parsed, comment, created_at)


def latest_per_annotator(reviews: list[Review]) -> dict[str, dict[str, Review]]:
    """Item id -> annotator (name key) -> that annotator's latest review of the item (a later one
    supersedes). Names that differ only in case, width or invisible characters are one annotator."""
    latest: dict[str, dict[str, Review]] = {}
    for review in reviews:
        latest.setdefault(review.item_id, {})[name_key(review.annotator)] = review
    return latest


def bind_draft(path: Path, draft: DraftIdentity, *, record: bool) -> None:
    """Check the database belongs to ``draft``; with ``record``, a new database is bound to it.

    Refused: a database recorded for another draft (or this draft changed since), and one that
    records no draft unless ``record`` is set and it holds no review yet.
    """
    with _connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(_DRAFT_KEYS))})", _DRAFT_KEYS
        ).fetchall()
        stored = dict(rows)
        if not stored:
            count = conn.execute("SELECT COUNT(*) FROM reviews").fetchone()[0]
            if not record or count:
                conn.execute("ROLLBACK")
                raise MMSpuBenchError(
                    f"{path}: {count} reviews of no recorded draft (not a database `curate review` "
                    f"opened for --draft {draft.folder}); review the draft into a new --db"
                )
            values = (draft.draft_id, draft.digest, draft.folder)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", zip(_DRAFT_KEYS, values, strict=True))
            conn.execute("COMMIT")
            return
        conn.execute("COMMIT")
    if set(stored) != set(_DRAFT_KEYS) or not all(isinstance(v, str) for v in stored.values()):
        raise MMSpuBenchError(
            f"{path}: the recorded draft is incomplete ({sorted(stored)}); not a review database"
        )
    recorded = DraftIdentity(stored["draft_id"], stored["draft_digest"], stored["draft_folder"])
    if not recorded.same_draft(draft):
        raise MMSpuBenchError(
            f"{path}: holds the reviews of the draft {recorded.describe()}, not of --draft {draft.describe()}; "
            "review this draft into a new --db"
        )
