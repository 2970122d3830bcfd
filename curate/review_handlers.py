"""Logic of the review app (the layout in ``review_app.py`` only wires these functions).

Annotators see each draft item as the Space shows benchmark items, every text escaped (a draft's
texts come from a model, names from people: none renders as a link, an image or HTML), may edit
any field, and every submitted version is validated on the spot with ``build``'s
validator before it is stored. Each annotator reviews the draft as ``annotate`` wrote it, so the
ratings are independent (what the agreement statistic assumes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.curate.annotate import PROVENANCE_FILE
from mmspubench.curate.draft_identity import DraftIdentity, draft_identity
from mmspubench.curate.names import name_key, normalise_name
from mmspubench.curate.review_db import RATINGS, add_review, all_reviews, bind_draft, open_db
from mmspubench.dataset_builder.builder import validate_release
from mmspubench.dataset_builder.files import iter_lines_bounded
from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.dataset_builder.raw import RawEntry, validate_entry
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, REQUIRED_FIELDS, TYPE_LABEL, TYPE_NAMES, Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import escape_markdown

EDITABLE = tuple(name for name in REQUIRED_FIELDS if name not in ("id", "image", "source"))
"""Fields an annotator may change."""
MAX_EDIT_TEXT = 1000
"""Longest text of one edited field (a question, an option, one attribute), in characters."""


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
    identity: DraftIdentity
    """The draft's id and content hash, recorded in the review database."""

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
    identity = draft_identity(Path(folder), [image_file(r) for r in records])
    return Draft(Path(folder), records, provenance, identity)


def apply_edits(draft: Draft, item_id: str, edits: dict[str, Any], who: str) -> Item:
    """The draft item with ``edits`` applied, validated as ``build`` would (raises on a bad field)."""
    record = draft.record(item_id)
    unknown = set(edits) - set(EDITABLE)
    if unknown:
        raise MMSpuBenchError(f"{who}: field {sorted(unknown)[0]!r} cannot be edited")
    fields = {**raw_fields(record), **edits, "id": item_id}
    return validate_entry(RawEntry(id=item_id, fields=fields, file=who), image_file(record))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _form_text(form: dict[str, Any], name: str) -> str:
    value = form.get(name)
    value = "" if value is None else value
    if not isinstance(value, str):
        raise MMSpuBenchError(f"field {name!r}: {type(value).__name__} given; expected a text")
    lines = value.splitlines() if name.endswith("attributes") else [value]
    longest = max((len(line) for line in lines), default=0)
    if longest > MAX_EDIT_TEXT:
        raise MMSpuBenchError(f"field {name!r}: {longest} characters; at most {MAX_EDIT_TEXT} per text")
    return value


def _form_types(form: dict[str, Any]) -> list[str]:
    value = form.get("spurious_types") or []
    if not isinstance(value, list) or not all(isinstance(t, str) and t in TYPE_NAMES for t in value):
        raise MMSpuBenchError(f"field 'spurious_types': {value!r} is not a list of the nine type names")
    return list(value)


def form_edits(draft: Draft, item_id: str, form: dict[str, Any]) -> dict[str, Any]:
    """The fields the submitted form changed, as raw values (texts with one attribute per line)."""
    record = draft.record(item_id)
    submitted = {
        "question": _form_text(form, "question"),
        "options": [_form_text(form, f"option_{letter}") for letter in ANSWER_LETTERS],
        "answer": _form_text(form, "answer"),
        "class_name": _form_text(form, "class_name"),
        "core_attributes": _lines(_form_text(form, "core_attributes")),
        "spurious_attributes": _lines(_form_text(form, "spurious_attributes")),
        "spurious_types": _form_types(form),
    }
    current = raw_fields(record)
    return {name: value for name, value in submitted.items() if value != current[name]}


def parse_rating(value: Any) -> int:
    """A rating from the page (``"1"``-``"5"``) or the API (1-5); anything else is refused."""
    if isinstance(value, int) and not isinstance(value, bool) and value in RATINGS:
        return value
    if isinstance(value, str) and value.strip() in {str(r) for r in RATINGS}:
        return int(value.strip())
    raise MMSpuBenchError(f"rating {value!r}: choose a rating from 1 to 5")


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
    name = normalise_name(annotator or "")
    if not item_id:
        raise MMSpuBenchError("no item open; press Start")
    if rating is None:
        raise MMSpuBenchError("choose a rating from 1 to 5")
    if decision is None:
        raise MMSpuBenchError("choose accept or reject")
    if comment is not None and not isinstance(comment, str):
        raise MMSpuBenchError(f"comment: {type(comment).__name__} given; expected a text")
    edits = form_edits(draft, item_id, form)
    apply_edits(draft, item_id, edits, f"your edit of item {item_id!r}")
    return add_review(db, item_id, name, parse_rating(rating), str(decision), edits, comment or "").seq


def next_item(draft: Draft, db: Path, annotator: str) -> str | None:
    """The first draft item this annotator has not reviewed yet, or ``None`` when all are done."""
    key = name_key(annotator)
    done = {r.item_id for r in all_reviews(db) if name_key(r.annotator) == key}
    return next((r.id for r in draft.records if r.id not in done), None)


def progress(draft: Draft, db: Path, annotator: str) -> str:
    """Progress of one annotator and of the team, as Markdown (every name escaped)."""
    name = normalise_name(annotator)
    team: dict[str, tuple[str, set[str]]] = {}
    for r in all_reviews(db):
        team.setdefault(name_key(r.annotator), (r.annotator, set()))[1].add(r.item_id)
    mine = team.get(name_key(name), (name, set()))[1]
    others = ", ".join(f"{escape_markdown(who)}: {len(items)}" for _, (who, items) in sorted(team.items()))
    return (
        f"**{escape_markdown(name)}**: {len(mine)} of {len(draft.records)} items reviewed · "
        f"all annotators: {others or 'none yet'}"
    )


def item_markdown(record: Item) -> str:
    """Question, answer, class, attributes and types of a draft item as Markdown, every text escaped
    (a draft's texts come from a model and edits from people: none may render as a link or image)."""
    e = escape_markdown
    answer = record.options[ANSWER_LETTERS.index(record.answer)]
    types = ", ".join(e(TYPE_LABEL[t]) for t in record.spurious_types)
    core = "\n".join(f"- {e(a)}" for a in record.core_attributes)
    spurious = "\n".join(f"- {e(a)}" for a in record.spurious_attributes)
    return (
        f"### Item {e(record.id)}\n\n**Question:** {e(record.question)}\n\n"
        f"**Correct answer:** {e(record.answer)}. {e(answer)}\n\n"
        f"**Class:** {e(record.class_name)} · **Source:** {e(record.source)} · **Spurious types:** {types}\n\n"
        f"**Core attributes** (of the class)\n\n{core}\n\n"
        f"**Spurious attributes** (in the picture)\n\n{spurious}\n"
    )


def item_view(draft: Draft, item_id: str) -> tuple[Path, str, dict[str, Any], str]:
    """Image file, Markdown, editable raw fields and provenance JSON of one item.

    The image is the draft's own file: Gradio copies a file into its cache once, under a temporary
    name renamed into place, so concurrent annotators are all served the same complete bytes. (A
    decoded image would be re-encoded and rewritten in place on every request, while other
    requests were serving it: "Too much/little data for declared Content-Length".)
    """
    record = draft.record(item_id)
    provenance = json.dumps(draft.provenance.get(item_id, {}), indent=1, ensure_ascii=False)
    return image_file(record), item_markdown(record), raw_fields(record), provenance


def start(draft_folder: Path, db: Path) -> Draft:
    """Load the draft and open (create) the database bound to it before serving anything."""
    draft = load_draft(draft_folder)
    bind_draft(open_db(db, create=True), draft.identity, record=True)
    return draft
