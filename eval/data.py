"""Benchmark rows -> ``Item`` records: ClassLabel integers become names, fields are checked.

Items are produced lazily, one decoded image at a time, so a full run never holds every image.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import (
    REQUIRED_FIELDS,
    Item,
)
from mmspubench.errors import MMSpuBenchError, record_error

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


def row_to_item(row: Mapping[str, Any], where: str) -> Item:
    """One dataset row -> ``Item`` (:meth:`Item.from_row`); raises ``MMSpuBenchError`` if malformed."""
    return Item.from_row(row, where)


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
