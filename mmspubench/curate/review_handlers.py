"""Logic of the review app (the layout in ``review_app.py`` only wires these functions).

Annotators see each draft item as the Space shows benchmark items (``space.explore.item_markdown``),
may edit any field, and every submitted version is validated on the spot with ``build``'s
validator before it is stored. Each annotator reviews the draft as ``annotate`` wrote it, so the
ratings are independent (what the agreement statistic assumes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.curate.annotate import PROVENANCE_FILE
from mmspubench.curate.review_db import add_review, all_reviews, open_db
from mmspubench.dataset_builder.builder import validate_release
from mmspubench.dataset_builder.files import iter_lines_bounded
from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.dataset_builder.raw import RawEntry, validate_entry
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, REQUIRED_FIELDS, Item
from mmspubench.errors import MMSpuBenchError

if TYPE_CHECKING:
    from PIL.Image import Image

EDITABLE = tuple(name for name in REQUIRED_FIELDS if name not in ("id", "image", "source"))
"""Fields an annotator may change."""


def image_file(record: Item) -> Path:
    """The image file of a record validated from a release (``validate_entry`` holds its path)."""
    if not isinstance(record.image, Path):
        raise TypeError(f"item {record.id!r}: expected the image file's path, got a decoded image")
    return record.image


def raw_fields(record: Item) -> dict[str, Any]:
    """A validated record as raw JSON fields (what ``annotation.json`` holds)."""
    return {
        "question": record.question,
        "options": list(record.options),
        "answer": record.answer,
        "class_name": record.class_name,
        "core_attributes": list(record.core_attributes),
        "spurious_attributes": list(record.spurious_attributes),
        "spurious_types": list(record.spurious_types),
        "source": record.source,
    }


@dataclass(frozen=True, slots=True)
class Draft:
    """A draft release, validated as ``build`` would, with its provenance."""

    folder: Path
    records: tuple[Item, ...]
    provenance: dict[str, dict[str, Any]]

    def record(self, item_id: str) -> Item:
        for record in self.records:
            if record.id == item_id:
                return record
        raise MMSpuBenchError(f"{self.folder}: no item {item_id!r} in the draft")


def load_draft(folder: Path) -> Draft:
    """Read and validate a draft (``annotation.json`` + images, ``provenance.jsonl`` if present)."""
    records = tuple(validate_release(Path(folder)))
    provenance: dict[str, dict[str, Any]] = {}
    path = Path(folder) / PROVENANCE_FILE
    if path.is_file():
        for number, line in iter_lines_bounded(path, "provenance.jsonl"):
            entry = loads_strict(line, f"{path}: line {number}")
            if not isinstance(entry, dict):
                raise MMSpuBenchError(f"{path}: line {number}: expected a JSON object")
            provenance[str(entry.get("id"))] = entry
    return Draft(Path(folder), records, provenance)


def apply_edits(draft: Draft, item_id: str, edits: dict[str, Any], who: str) -> Item:
    """The draft item with ``edits`` applied, validated as ``build`` would (raises on a bad field)."""
    record = draft.record(item_id)
    unknown = set(edits) - set(EDITABLE)
    if unknown:
        raise MMSpuBenchError(f"{who}: field {sorted(unknown)[0]!r} cannot be edited")
    fields = {**raw_fields(record), **edits, "id": item_id}
    return validate_entry(RawEntry(id=item_id, fields=fields, file=who), image_file(record))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def form_edits(draft: Draft, item_id: str, form: dict[str, Any]) -> dict[str, Any]:
    """The fields the submitted form changed, as raw values (texts with one attribute per line)."""
    record = draft.record(item_id)
    submitted = {
        "question": form["question"],
        "options": [form[f"option_{letter}"] for letter in ANSWER_LETTERS],
        "answer": form["answer"],
        "class_name": form["class_name"],
        "core_attributes": _lines(form["core_attributes"]),
        "spurious_attributes": _lines(form["spurious_attributes"]),
        "spurious_types": list(form["spurious_types"] or []),
    }
    current = raw_fields(record)
    return {name: value for name, value in submitted.items() if value != current[name]}


def submit(
    draft: Draft,
    db: Path,
    annotator: str,
    item_id: str,
    rating: Any,
    decision: Any,
    comment: str,
    form: dict[str, Any],
) -> int:
    """Validate and store one review; returns its sequence number."""
    name = (annotator or "").strip()
    if not name:
        raise MMSpuBenchError("enter your name first")
    if not item_id:
        raise MMSpuBenchError("no item open; press Start")
    if rating is None:
        raise MMSpuBenchError("choose a rating from 1 to 5")
    if decision is None:
        raise MMSpuBenchError("choose accept or reject")
    edits = form_edits(draft, item_id, form)
    apply_edits(draft, item_id, edits, f"your edit of item {item_id!r}")
    return add_review(db, item_id, name, int(rating), str(decision), edits, comment or "").seq


def next_item(draft: Draft, db: Path, annotator: str) -> str | None:
    """The first draft item this annotator has not reviewed yet, or ``None`` when all are done."""
    done = {r.item_id for r in all_reviews(db) if r.annotator == annotator.strip()}
    return next((r.id for r in draft.records if r.id not in done), None)


def progress(draft: Draft, db: Path, annotator: str) -> str:
    """Progress of one annotator and of the team, as Markdown."""
    reviews = all_reviews(db)
    mine = {r.item_id for r in reviews if r.annotator == annotator.strip()}
    team: dict[str, set[str]] = {}
    for r in reviews:
        team.setdefault(r.annotator, set()).add(r.item_id)
    others = ", ".join(f"{who}: {len(items)}" for who, items in sorted(team.items()))
    return f"**{annotator.strip()}**: {len(mine)} of {len(draft.records)} items reviewed · all annotators: {others or 'none yet'}"


def item_view(draft: Draft, item_id: str) -> tuple[Image, str, dict[str, Any], str]:
    """Image, Markdown (the Space's item view), editable raw fields and provenance JSON of one item."""
    from mmspubench.curate.sources import open_rgb
    from mmspubench.space.explore import item_markdown

    record = draft.record(item_id)
    image = open_rgb(image_file(record))
    provenance = json.dumps(draft.provenance.get(item_id, {}), indent=1, ensure_ascii=False)
    return image, item_markdown(record), raw_fields(record), provenance


def start(draft_folder: Path, db: Path) -> Draft:
    """Load the draft and open (create) the database before serving anything."""
    draft = load_draft(draft_folder)
    open_db(db, create=True)
    return draft
