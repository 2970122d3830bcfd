"""Which draft a review database belongs to.

Every draft numbers its items from ``000000``, so the reviews of one draft name items that another
draft also holds: applied there, they would accept and edit the wrong items. ``curate annotate``
writes a random ``draft_id`` into ``annotate.json``; a draft's identity is that id and a SHA-256
of its content (``annotation.json`` and every image file, in record order). ``curate review``
records the identity in the database it opens, and both ``review`` and ``export`` refuse a
database recorded for another draft, or for the same draft changed since.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmspubench.dataset_builder.raw import ANNOTATION_FILE
from mmspubench.errors import MMSpuBenchError

RUN_FILE = "annotate.json"
"""What ``curate annotate`` records about its run (config, model, prompts, ``draft_id``)."""
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class DraftIdentity:
    """The identity of one draft folder."""

    draft_id: str
    """The random id ``annotate`` wrote (``none`` for a raw release not written by ``annotate``)."""
    digest: str
    """SHA-256 (hex) of ``annotation.json`` and the image files, in record order."""
    folder: str
    """Where the draft was when the identity was taken (for messages only; not compared)."""

    def same_draft(self, other: DraftIdentity) -> bool:
        """Same id and same content (the folder may have moved)."""
        return (self.draft_id, self.digest) == (other.draft_id, other.digest)

    def describe(self) -> str:
        """The identity in one phrase, for an error line."""
        return f"{self.folder} (draft id {self.draft_id}, content sha256 {self.digest[:16]})"


def new_draft_id() -> str:
    """A fresh random draft id (``annotate`` writes one per draft)."""
    return uuid.uuid4().hex


def draft_identity(folder: Path, images: Sequence[Path]) -> DraftIdentity:
    """The identity of the draft in ``folder`` whose records name ``images`` (in record order)."""
    folder = Path(folder)
    sha = hashlib.sha256()
    for path in (folder / ANNOTATION_FILE, *images):
        name = path.name.encode("utf-8", "surrogatepass")
        sha.update(len(name).to_bytes(4, "big") + name)
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                sha.update(chunk)
        sha.update(b"\x00")
    return DraftIdentity(_draft_id(folder), sha.hexdigest(), str(folder))


def _draft_id(folder: Path) -> str:
    path = folder / RUN_FILE
    if not path.is_file():
        return "none"
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise MMSpuBenchError(f"{path}: not readable JSON ({err}); rerun `curate annotate`") from None
    value = run.get("draft_id") if isinstance(run, dict) else None
    if value is None:
        return "none"
    if not isinstance(value, str) or not value.isalnum() or len(value) > 64:
        raise MMSpuBenchError(f"{path}: field 'draft_id' {value!r} is not the id `curate annotate` writes")
    return value
