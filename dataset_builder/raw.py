"""Read a raw release's ``annotation.json`` into validated, typed records.

The raw release's exact JSON keys are not fixed, so every raw key goes through one declared
table (``KEY_TABLE``) that lists the accepted spellings of each schema field. Anything the table
does not know is rejected with a message naming the file, the record and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mmspubench.dataset_builder.files import MAX_ANNOTATION_BYTES, shown
from mmspubench.dataset_builder.json_strict import load_file
from mmspubench.dataset_builder.raw_text import (
    check_id_text,
    check_plain_text,
    duplicate_id_error,
    fold,
    id_key,
)
from mmspubench.dataset_builder.schema import (
    ANSWER_LETTERS,
    MAX_ATTRIBUTES,
    MAX_TYPES,
    MIN_ATTRIBUTES,
    MIN_TYPES,
    NUM_OPTIONS,
    SOURCES,
    SPURIOUS_TYPES,
    Item,
)
from mmspubench.errors import MMSpuBenchError, record_error

ANNOTATION_FILE = "annotation.json"
IMAGES_DIR = Path("data") / "images"

UnknownKeyPolicy = Literal["error", "ignore"]

KEY_TABLE: dict[str, tuple[str, ...]] = {
    "id": ("id", "qid", "question_id", "sample_id"),
    "image": ("image", "image_path", "image_file", "img", "file_name", "filename"),
    "question": ("question", "query"),
    "options": ("options", "choices", "option"),
    "answer": ("answer", "correct_answer", "answer_letter", "gt_answer"),
    "class_name": ("class_name", "class", "classname", "class_label", "gt_class", "ground_truth", "category"),
    "core_attributes": ("core_attributes", "core_attribute", "core_attrs", "core"),
    "spurious_attributes": ("spurious_attributes", "spurious_attribute", "spurious_attrs", "spurious"),
    "spurious_types": ("spurious_types", "spurious_type", "types", "type", "bias_types", "bias_type"),
    "source": ("source", "source_dataset", "dataset", "origin"),
    "counterfactuals": ("counterfactuals",),
}
"""Schema field (or ``image``, the optional image path, or ``counterfactuals``, the optional list
checked by ``raw_counterfactuals``) -> accepted raw keys.

Raw keys are compared after lower-casing and turning spaces and hyphens into underscores, so
``"Core Attributes"`` and ``"core-attributes"`` both mean ``core_attributes``.
"""

REQUIRED_RAW_FIELDS: tuple[str, ...] = tuple(f for f in KEY_TABLE if f not in ("image", "counterfactuals"))
"""Fields every raw record must carry; the image is found by id when ``image`` is absent."""

_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Da-d])\s*[.):]\s*")
_ANSWER_FORM = re.compile(r"^\s*\(?([A-Da-d])\s*[.):]?\s*$")


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One raw record as read from the file, fields mapped but values not yet validated."""

    id: str
    """The record id as text."""
    fields: dict[str, Any]
    """Schema field -> raw value."""
    file: str
    """The file the record came from, for error messages."""


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


_KEY_LOOKUP: dict[str, str] = {_norm_key(raw): field for field, raws in KEY_TABLE.items() for raw in raws}


def _norm_name(text: str) -> str:
    text = text.strip().lower().replace("&", " and ")
    return re.sub(r"[^a-z0-9]+", "_", text).strip("_")


def _type_aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for t in SPURIOUS_TYPES:
        for variant in (
            t.name,
            t.abbrev,
            t.title,
            t.title.replace(" and ", " "),
            t.title.replace(" and ", "/"),
        ):
            aliases[_norm_name(variant)] = t.name
    # Obvious short forms seen in annotation tools and the paper's prose.
    extra = {
        "texture": "texture_noise",
        "co_occurring_object": "co_occurring_objects",
        "cooccurring_objects": "co_occurring_objects",
        "co_occurrence": "co_occurring_objects",
        "size": "relative_size",
        "color": "colorization",
        "colour": "colorization",
        "colorisation": "colorization",
        "lighting": "lighting_shadows",
        "lighting_shadow": "lighting_shadows",
        "perspective": "perspective_angle",
        "shape_distortion": "shape",
    }
    aliases.update(extra)
    return aliases


TYPE_ALIASES: dict[str, str] = _type_aliases()
"""Normalised spelling (canonical name, abbreviation, title, short form) -> canonical type name."""

SOURCE_ALIASES: dict[str, str] = {
    **{re.sub(r"[^a-z0-9]", "", s.lower()): s for s in SOURCES},
    "imagenetrendition": "ImageNet-R",
    "imagenetrenditions": "ImageNet-R",
    "imagenetcorruption": "ImageNet-C",
    "imagenetadversarial": "ImageNet-A",
    "synth": "synthetic",
}
"""Normalised source spelling -> canonical source name."""


def read_annotation(release: Path, *, unknown_keys: UnknownKeyPolicy = "error") -> Iterator[RawEntry]:
    """Yield the raw entries of ``release/annotation.json`` (a list, or a dict keyed by id)."""
    path = release / ANNOTATION_FILE
    file = shown(path)
    if not path.exists() and not path.is_symlink():
        raise record_error(file, None, None, "annotation file not found (expected RAW/annotation.json)")
    data = load_file(path, limit=MAX_ANNOTATION_BYTES, what="annotation.json")
    if isinstance(data, dict):
        items: Iterator[tuple[str | None, Any]] = iter(data.items())
    elif isinstance(data, list):
        items = ((None, item) for item in data)
    else:
        raise record_error(
            file,
            None,
            None,
            f"top level is {type(data).__name__}; expected a list of records or a dict keyed by id",
        )
    # A list whose records carry no id at all (the published release): the position is the id.
    positional = isinstance(data, list) and not any(_has_id(item) for item in data)
    seen: dict[str, str] = {}
    for position, (key, item) in enumerate(items):
        entry = _map_entry(file, position, key, item, unknown_keys, positional)
        key_of_id = id_key(entry.id)
        if key_of_id in seen:
            raise duplicate_id_error(file, entry.id, seen[key_of_id])
        seen[key_of_id] = entry.id
        yield entry


def position_id(position: int) -> str:
    """The id of the record at ``position`` of a list without ids: zero-padded to six digits."""
    return f"{position:06d}"


def _has_id(item: Any) -> bool:
    return isinstance(item, Mapping) and any(_KEY_LOOKUP.get(_norm_key(str(k))) == "id" for k in item)


def _map_entry(
    file: str, position: int, key: str | None, item: Any, unknown_keys: UnknownKeyPolicy, positional: bool
) -> RawEntry:
    label = key if key is not None else position_id(position) if positional else f"#{position}"
    if not isinstance(item, Mapping):
        raise record_error(file, label, None, f"record is {type(item).__name__}; expected a JSON object")
    label = _label(item, label)
    fields: dict[str, Any] = {}
    raw_key_of: dict[str, str] = {}
    for raw_key, value in item.items():
        field = _KEY_LOOKUP.get(_norm_key(str(raw_key)))
        if field is None:
            if unknown_keys == "ignore":
                continue
            known = ", ".join(KEY_TABLE)
            others = [str(k) for k in item if _KEY_LOOKUP.get(_norm_key(str(k))) is None]
            raise record_error(
                file,
                label,
                str(raw_key),
                f"unknown key (unknown keys of this record: {', '.join(map(shown, others))}); expected one of the "
                f"fields {known} (or a listed variant); to drop keys the table does not know, pass "
                "--unknown-keys ignore (unknown_keys='ignore' from Python)",
            )
        if field in fields:
            raise record_error(
                file, label, str(raw_key), f"maps to {field!r} like key {raw_key_of[field]!r}; give it once"
            )
        fields[field] = value
        raw_key_of[field] = str(raw_key)
    record_id = label if positional else _entry_id(file, label, key, fields)
    fields["id"] = record_id
    return RawEntry(id=record_id, fields=fields, file=file)


def _label(item: Mapping[Any, Any], fallback: str) -> str:
    """The record's id for error messages, when it has a usable one; else its key or position."""
    for raw_key, value in item.items():
        if (
            _KEY_LOOKUP.get(_norm_key(str(raw_key))) == "id"
            and isinstance(value, (str, int))
            and str(value).strip()
        ):
            return str(value).strip()
    return fallback


def _entry_id(file: str, label: str, key: str | None, fields: dict[str, Any]) -> str:
    value = fields.get("id", key)
    if value is None:
        why = "; other records carry ids: give every record an id, or none (then the position is the id)"
        raise record_error(file, label, "id", "missing required field" + ("" if key is not None else why))
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise record_error(file, label, "id", f"value {value!r} is not a string or integer")
    text = str(value).strip()
    if not text:
        raise record_error(file, label, "id", "empty id")
    check_id_text(file, label, text)
    if key is not None and text != key:
        raise record_error(file, key, "id", f"value {text!r} differs from the record's key {key!r}")
    return text


def validate_entry(entry: RawEntry, image_path: Path) -> Item:
    """Check every field of ``entry`` and return the item; its image is ``image_path`` (checked elsewhere)."""
    f, rid, fields = entry.file, entry.id, entry.fields
    for name in REQUIRED_RAW_FIELDS:
        if name not in fields or fields[name] is None:
            raise record_error(
                f, rid, name, f"missing required field (accepted keys: {', '.join(KEY_TABLE[name])})"
            )
    options = parse_options(f, rid, fields["options"])
    record = Item(
        id=rid,
        image=image_path,
        question=_text(f, rid, "question", fields["question"]),
        options=options,
        answer=parse_answer(f, rid, fields["answer"], options),
        class_name=_text(f, rid, "class_name", fields["class_name"]),
        core_attributes=parse_attributes(f, rid, "core_attributes", fields["core_attributes"]),
        spurious_attributes=parse_attributes(f, rid, "spurious_attributes", fields["spurious_attributes"]),
        spurious_types=parse_types(f, rid, fields["spurious_types"]),
        source=parse_source(f, rid, fields["source"]),
    )
    check_storable(f, record)
    return record


def check_storable(file: str, record: Item) -> None:
    """Refuse text the Parquet writer cannot store (UTF-8), e.g. a lone UTF-16 surrogate."""
    for name in ("id", "question", "options", "class_name", "core_attributes", "spurious_attributes"):
        value = getattr(record, name)
        for text in value if isinstance(value, tuple) else (value,):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as err:
                raise record_error(
                    file,
                    record.id,
                    name,
                    f"text {text!r} holds {text[err.start : err.end]!r} at position {err.start}, "
                    "which cannot be stored as UTF-8 (a lone surrogate); fix the text",
                ) from None


def _text(file: str, rid: str, field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise record_error(file, rid, field, f"value {value!r} is not a string")
    if not value.strip():
        raise record_error(file, rid, field, "empty text; expected a non-empty string")
    check_plain_text(file, rid, field, value)
    return value.strip()


def parse_options(file: str, rid: str, value: Any) -> tuple[str, str, str, str]:
    """Four option texts from a list (``"A. text"`` or ``"text"``) or a dict keyed ``A``-``D``."""
    if isinstance(value, Mapping):
        keys = sorted(str(k).strip().upper() for k in value)
        if keys != list(ANSWER_LETTERS):
            raise record_error(
                file, rid, "options", f"keys {sorted(map(str, value))} are not exactly A, B, C, D"
            )
        by_letter = {str(k).strip().upper(): v for k, v in value.items()}
        value = [by_letter[letter] for letter in ANSWER_LETTERS]
    if not isinstance(value, list):
        raise record_error(file, rid, "options", f"value {value!r} is not a list of {NUM_OPTIONS} strings")
    if len(value) != NUM_OPTIONS:
        raise record_error(file, rid, "options", f"{len(value)} options; expected exactly {NUM_OPTIONS}")
    texts: list[str] = []
    for letter, option in zip(ANSWER_LETTERS, value, strict=True):
        if not isinstance(option, str):
            raise record_error(file, rid, "options", f"option {letter} {option!r} is not a string")
        texts.append(_strip_option_prefix(file, rid, letter, option))
    folded = [fold(t) for t in texts]
    if len(set(folded)) != NUM_OPTIONS:
        dupes = sorted({t for t in texts if folded.count(fold(t)) > 1})
        raise record_error(
            file,
            rid,
            "options",
            f"duplicate options {dupes}; the four options must differ (compared after Unicode "
            "normalisation, case folding and dropping zero-width characters)",
        )
    return (texts[0], texts[1], texts[2], texts[3])


def _strip_option_prefix(file: str, rid: str, letter: str, option: str) -> str:
    match = _OPTION_PREFIX.match(option)
    if match is not None:
        if match.group(1).upper() != letter:
            raise record_error(
                file,
                rid,
                "options",
                f"option {option!r} in position {letter} carries prefix {match.group(1)!r}",
            )
        option = option[match.end() :]
    if not option.strip():
        raise record_error(file, rid, "options", f"option {letter} is empty")
    check_plain_text(file, rid, "options", option)
    return option.strip()


def parse_answer(file: str, rid: str, value: Any, options: tuple[str, ...]) -> str:
    """The answer letter, from ``"A"``, ``"a"``, ``"(A)"``, ``"A."``, ``"A. option text"`` or the option text."""
    if isinstance(value, str):
        match = _ANSWER_FORM.match(value)
        if match is not None:
            return match.group(1).upper()
        folded = [fold(o) for o in options]
        prefixed = _OPTION_PREFIX.match(value)
        if prefixed is not None:
            letter = prefixed.group(1).upper()
            if fold(value[prefixed.end() :]) == folded[ANSWER_LETTERS.index(letter)]:
                return letter
        elif fold(value) in folded:
            return ANSWER_LETTERS[folded.index(fold(value))]
    raise record_error(
        file, rid, "answer", f"value {value!r} is not one of the letters A, B, C, D (or its option)"
    )


def parse_attributes(file: str, rid: str, field: str, value: Any) -> tuple[str, ...]:
    """One to five non-empty attribute strings."""
    if not isinstance(value, list):
        raise record_error(file, rid, field, f"value {value!r} is not a list of strings")
    if not MIN_ATTRIBUTES <= len(value) <= MAX_ATTRIBUTES:
        raise record_error(
            file, rid, field, f"{len(value)} attributes; expected {MIN_ATTRIBUTES} to {MAX_ATTRIBUTES}"
        )
    for item in value:
        if not isinstance(item, str):
            raise record_error(file, rid, field, f"attribute {item!r} is not a string")
        if not item.strip():
            raise record_error(file, rid, field, "empty attribute text")
        check_plain_text(file, rid, field, item)
    return tuple(item.strip() for item in value)


def parse_types(file: str, rid: str, value: Any) -> tuple[str, ...]:
    """One or two canonical type names from names, abbreviations or titles (list or comma-joined string)."""
    if isinstance(value, str):
        value = [part for part in re.split(r"[,;]", value) if part.strip()]
    if not isinstance(value, list):
        raise record_error(file, rid, "spurious_types", f"value {value!r} is not a list of type names")
    if not MIN_TYPES <= len(value) <= MAX_TYPES:
        raise record_error(
            file, rid, "spurious_types", f"{len(value)} types; expected {MIN_TYPES} or {MAX_TYPES}"
        )
    names: list[str] = []
    for item in value:
        canonical = TYPE_ALIASES.get(_norm_name(item)) if isinstance(item, str) else None
        if canonical is None:
            known = ", ".join(f"{t.name} ({t.abbrev})" for t in SPURIOUS_TYPES)
            raise record_error(file, rid, "spurious_types", f"unknown type {item!r}; expected one of {known}")
        if canonical in names:
            raise record_error(file, rid, "spurious_types", f"type {canonical!r} given twice")
        names.append(canonical)
    return tuple(names)


def parse_source(file: str, rid: str, value: Any) -> str:
    """The canonical source dataset name."""
    canonical = (
        SOURCE_ALIASES.get(re.sub(r"[^a-z0-9]", "", value.lower())) if isinstance(value, str) else None
    )
    if canonical is None:
        raise record_error(
            file, rid, "source", f"unknown source {value!r}; expected one of {', '.join(SOURCES)}"
        )
    return canonical


def check_release(release: Path) -> None:
    """Fail early when ``release`` is not a folder."""
    if not release.is_dir():
        raise MMSpuBenchError(
            f"{release}: raw release folder not found (expected a folder holding {ANNOTATION_FILE})"
        )
