"""Benchmark rows -> ``Item`` records: ClassLabel integers become names, fields are checked.

Items are produced lazily, one decoded image at a time, so a full run never holds every image.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import (
    ANSWER_LETTERS,
    NUM_OPTIONS,
    REQUIRED_FIELDS,
    SOURCES,
    TYPE_NAMES,
)
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval.records import Item

if TYPE_CHECKING:
    import datasets


def check_columns(dataset: datasets.Dataset, where: str) -> None:
    """Raise when the dataset lacks a field of the schema."""
    missing = [name for name in REQUIRED_FIELDS if name not in dataset.column_names]
    if missing:
        raise MMSpuBenchError(
            f"{where}: missing required field(s) {', '.join(missing)}; "
            f"expected the MM-SpuBench schema fields {', '.join(REQUIRED_FIELDS)}"
        )


def check_limit(limit: int | None) -> None:
    """``--limit`` must be a positive number of items."""
    if limit is not None and limit <= 0:
        raise MMSpuBenchError(f"--limit must be a positive number of items, got {limit}")


def item_ids(dataset: datasets.Dataset, limit: int | None) -> list[str]:
    """Ids of the items a run evaluates: the first ``limit`` rows in dataset order (all if ``None``)."""
    check_limit(limit)
    n = len(dataset) if limit is None else min(limit, len(dataset))
    ids = [str(i) for i in dataset.select_columns(["id"]).select(range(n))["id"]]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise MMSpuBenchError(f"dataset: field 'id': duplicate id(s) {dupes[:5]}; ids must be unique")
    return ids


def _label(value: Any, names: Sequence[str], where: str, row_id: str, field: str) -> str:
    # A built dataset stores ClassLabel integers; a hand-made one may already hold names.
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value in names:
        return value
    raise record_error(where, row_id, field, f"bad value {value!r}; expected one of {list(names)}")


def _texts(
    row: Mapping[str, Any], field: str, where: str, row_id: str, low: int, high: int
) -> tuple[str, ...]:
    value = row[field]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise record_error(where, row_id, field, f"bad value {value!r}; expected a list of strings")
    if not low <= len(value) <= high:
        raise record_error(where, row_id, field, f"has {len(value)} entries; expected {low} to {high}")
    return tuple(value)


def row_to_item(row: Mapping[str, Any], where: str) -> Item:
    """One dataset row (as ``datasets`` yields it) -> ``Item``; raises ``MMSpuBenchError`` if malformed."""
    row_id = str(row["id"])
    types = row["spurious_types"]
    if not isinstance(types, list | tuple) or not 1 <= len(types) <= 2:
        raise record_error(where, row_id, "spurious_types", f"bad value {types!r}; expected 1 or 2 types")
    image = row["image"]
    if not hasattr(image, "convert"):
        raise record_error(
            where, row_id, "image", f"bad value of type {type(image).__name__}; expected an image"
        )
    return Item(
        id=row_id,
        image=image.convert("RGB"),
        question=str(row["question"]),
        options=_texts(row, "options", where, row_id, NUM_OPTIONS, NUM_OPTIONS),
        answer=_label(row["answer"], ANSWER_LETTERS, where, row_id, "answer"),
        class_name=str(row["class_name"]),
        core_attributes=_texts(row, "core_attributes", where, row_id, 1, 5),
        spurious_attributes=_texts(row, "spurious_attributes", where, row_id, 1, 5),
        types=tuple(_label(t, TYPE_NAMES, where, row_id, "spurious_types") for t in types),
        source=_label(row["source"], SOURCES, where, row_id, "source"),
    )


def iter_items(dataset: datasets.Dataset, ids: Sequence[str], where: str) -> Iterator[Item]:
    """The items with the given ids, in the order of ``ids``, decoded one at a time."""
    check_columns(dataset, where)
    position = {item_id: i for i, item_id in enumerate(dataset.select_columns(["id"])["id"])}
    for item_id in ids:
        if item_id not in position:
            raise record_error(where, item_id, "id", "not found in the dataset")
        yield row_to_item(dataset[position[item_id]], where)


def load_items(dataset: datasets.Dataset, limit: int | None, where: str) -> list[Item]:
    """All items of a run at once (small runs, tests and the Space)."""
    check_columns(dataset, where)
    return list(iter_items(dataset, item_ids(dataset, limit), where))
