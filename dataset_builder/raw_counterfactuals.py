"""Check a raw record's optional ``counterfactuals`` list (``schema.Counterfactual``).

Each entry is ``{"image", "name", "targets", "description"}``: the image a relative path inside the
release (the same path rules as the item's image), a PNG or JPEG of the same size and mode as the
item's image; the name unique within the item and ``[a-z0-9-]+``; the targets known type names, a
subset of the item's spurious types; the description one non-empty line. Anything else is one
error naming the file, the record and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.images import MAX_IMAGE_PIXELS, check_image, resolve_image
from mmspubench.dataset_builder.orientation import Look, look
from mmspubench.dataset_builder.raw import RawEntry, parse_types
from mmspubench.dataset_builder.raw_text import check_plain_text
from mmspubench.dataset_builder.schema import COUNTERFACTUALS_FIELD, Counterfactual, Item
from mmspubench.errors import MMSpuBenchError, record_error
from PIL import Image

NAME_PATTERN = re.compile(r"[a-z0-9-]+")
ENTRY_KEYS: tuple[str, ...] = ("image", "name", "targets", "description")


def parse_counterfactuals(
    release: Path, entry: RawEntry, record: Item, *, max_pixels: int = MAX_IMAGE_PIXELS
) -> tuple[Counterfactual, ...]:
    """The record's counterfactuals (``()`` when the field is absent), every entry checked."""
    value = entry.fields.get(COUNTERFACTUALS_FIELD)
    if value is None:
        return ()
    file, rid = entry.file, entry.id
    if not isinstance(value, list):
        raise record_error(file, rid, COUNTERFACTUALS_FIELD, f"value {value!r} is not a list of objects")
    item_look = _look(Path(str(record.image)))
    names: set[str] = set()
    out = []
    for position, raw in enumerate(value):
        where = f"{COUNTERFACTUALS_FIELD}[{position}]"
        counterfactual = _entry(release, file, rid, where, raw, record, max_pixels)
        if counterfactual.name in names:
            raise record_error(file, rid, f"{where}.name", f"name {counterfactual.name!r} given twice")
        names.add(counterfactual.name)
        own = _look(Path(str(counterfactual.image)))
        if not own.same(item_look):
            raise record_error(
                file, rid, f"{where}.image", f"image is {own}; expected the item image's {item_look}"
            )
        out.append(counterfactual)
    return tuple(out)


def _entry(
    release: Path, file: str, rid: str, where: str, raw: Any, record: Item, max_pixels: int
) -> Counterfactual:
    if not isinstance(raw, dict):
        raise record_error(
            file, rid, where, f"entry {raw!r} is not an object with keys {', '.join(ENTRY_KEYS)}"
        )
    unknown = [str(k) for k in raw if k not in ENTRY_KEYS]
    missing = [k for k in ENTRY_KEYS if k not in raw]
    if unknown or missing:
        what = f"unknown key {unknown[0]!r}" if unknown else f"missing key {missing[0]!r}"
        raise record_error(file, rid, where, f"{what}; expected exactly the keys {', '.join(ENTRY_KEYS)}")
    image = _image(release, file, rid, f"{where}.image", raw["image"], max_pixels)
    name = raw["name"]
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise record_error(file, rid, f"{where}.name", f"name {name!r} does not match [a-z0-9-]+")
    targets = _targets(file, rid, f"{where}.targets", raw["targets"], record.spurious_types)
    description = raw["description"]
    if not isinstance(description, str) or not description.strip() or len(description.splitlines()) != 1:
        raise record_error(
            file, rid, f"{where}.description", f"value {description!r}; expected one non-empty line"
        )
    check_plain_text(file, rid, f"{where}.description", description)
    try:
        description.encode("utf-8")
    except UnicodeEncodeError as err:  # a lone surrogate: the Parquet writer cannot store it
        raise record_error(
            file,
            rid,
            f"{where}.description",
            f"text {description!r} cannot be stored as UTF-8 ({err.reason})",
        ) from None
    return Counterfactual(image=image, name=name, targets=targets, description=description.strip())


def _image(release: Path, file: str, rid: str, field: str, named: Any, max_pixels: int) -> Path:
    # The item image's checks, with errors naming this entry's field instead of "image".
    if not isinstance(named, str) or not named.strip():
        raise record_error(file, rid, field, f"value {named!r} is not a non-empty relative path")
    try:
        path = resolve_image(release, file, rid, named)
        check_image(path, file, rid, max_pixels=max_pixels)
    except MMSpuBenchError as err:
        prefix = f"{file}: record {rid!r}: field 'image': "
        text = str(err)
        raise record_error(
            file, rid, field, text[len(prefix) :] if text.startswith(prefix) else text
        ) from None
    return path


def _targets(file: str, rid: str, field: str, value: Any, item_types: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise record_error(file, rid, field, f"value {value!r} is not a non-empty list of type names")
    try:
        names = parse_types(file, rid, value)
    except MMSpuBenchError as err:
        text = str(err).split("field 'spurious_types': ", 1)[-1]
        raise record_error(file, rid, field, text) from None
    outside = [n for n in names if n not in item_types]
    if outside:
        raise record_error(
            file,
            rid,
            field,
            f"type {outside[0]!r} is not one of the item's spurious types {list(item_types)}",
        )
    return names


def _look(path: Path) -> Look:
    with Image.open(path) as im:
        return look(im)
