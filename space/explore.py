"""Explore tab: an index of the benchmark items, filters over it, and the view of one item.

Everything here is a plain function of a ``datasets.Dataset`` with the schema's ``FEATURES``;
the layout only wires these functions to components.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
from mmspubench.dataset_builder.schema import (
    ANSWER_LETTERS,
    SOURCES,
    SPURIOUS_TYPES,
    TYPE_LABEL,
    TYPE_NAMES,
    Item,
)
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import code_span, escape_cell

if TYPE_CHECKING:
    import datasets

TYPE_TITLE: dict[str, str] = {t.name: t.title for t in SPURIOUS_TYPES}
LABEL_TYPE: dict[str, str] = {label: name for name, label in TYPE_LABEL.items()}
INDEX_COLUMNS: tuple[str, ...] = ("id", "class_name", "types", "source", "question")
ALL = "(all)"
"""Choice meaning "no filter" in the type, source and class dropdowns (ignored in the type filter
once a type is chosen beside it)."""


@dataclass(frozen=True, slots=True)
class ItemIndex:
    """The text columns of every item, without images, for fast filtering."""

    frame: pd.DataFrame
    """One row per item: ``INDEX_COLUMNS`` plus ``type_names`` (list of canonical names)."""
    row_of: dict[str, int]
    """Dataset row number of each item id."""


def _label_names(value: Any, names: Sequence[str]) -> Any:
    """Map ClassLabel integers to names; leave strings untouched."""
    if isinstance(value, int):
        return names[value]
    return value


def build_index(dataset: datasets.Dataset) -> ItemIndex:
    """Index the text fields of ``dataset`` (images are not decoded)."""
    if len(dataset) == 0:
        raise MMSpuBenchError("the dataset has no items to explore")
    text = dataset.select_columns(["id", "class_name", "spurious_types", "source", "question"])
    rows = text.to_list()
    records = []
    for row in rows:
        type_names = [_label_names(t, TYPE_NAMES) for t in row["spurious_types"]]
        records.append(
            {
                "id": row["id"],
                "class_name": row["class_name"],
                "types": ", ".join(TYPE_TITLE[t] for t in type_names),
                "source": _label_names(row["source"], SOURCES),
                "question": row["question"],
                "type_names": type_names,
            }
        )
    frame = pd.DataFrame.from_records(records)
    return ItemIndex(frame=frame, row_of={item_id: i for i, item_id in enumerate(frame["id"])})


def filter_choices(index: ItemIndex) -> tuple[list[str], list[str], list[str]]:
    """Choices for the type, source and class filters, restricted to values present in the data."""
    present = {t for names in index.frame["type_names"] for t in names}
    types = [ALL, *(TYPE_LABEL[t] for t in TYPE_NAMES if t in present)]
    sources = [ALL, *sorted(set(index.frame["source"]))]
    classes = [ALL, *sorted(set(index.frame["class_name"]))]
    return types, sources, classes


def filter_items(
    index: ItemIndex,
    types: Sequence[str] | None = None,
    source: str | None = None,
    class_name: str | None = None,
    query: str = "",
) -> pd.DataFrame:
    """Items having any of ``types`` (labels or names), from ``source``, of ``class_name``, matching ``query``."""
    frame = index.frame
    mask = pd.Series(True, index=frame.index)
    wanted = {LABEL_TYPE.get(t, t) for t in types or () if t != ALL}
    if wanted:
        unknown = wanted - set(TYPE_NAMES)
        if unknown:
            raise MMSpuBenchError(
                f"unknown spurious type {sorted(unknown)[0]!r}; expected one of {list(TYPE_NAMES)}"
            )
        mask &= frame["type_names"].map(lambda names: bool(wanted.intersection(names)))
    if source and source != ALL:
        mask &= frame["source"] == source
    if class_name and class_name != ALL:
        mask &= frame["class_name"] == class_name
    if query.strip():
        needle = query.strip().lower()
        haystack = frame["id"] + " " + frame["class_name"] + " " + frame["question"]
        mask &= haystack.str.lower().str.contains(needle, regex=False)
    return frame.loc[mask, list(INDEX_COLUMNS)].reset_index(drop=True)


def item_view(dataset: datasets.Dataset, index: ItemIndex, item_id: str) -> Item:
    """The item with id ``item_id``, image decoded."""
    item_id = str(item_id).strip()
    if item_id not in index.row_of:
        raise MMSpuBenchError(f"no item with id {item_id!r} in the dataset")
    return Item.from_row(dataset[index.row_of[item_id]], "dataset")


def options_table(item: Item) -> pd.DataFrame:
    """Columns ``letter``, ``option``, ``correct`` (a check mark on the right answer)."""
    letters = list(ANSWER_LETTERS[: len(item.options)])
    return pd.DataFrame(
        {
            "letter": letters,
            "option": list(item.options),
            "correct": ["✓" if letter == item.answer else "" for letter in letters],
        }
    )


def item_markdown(view: Item) -> str:
    """Question, class, attributes and types of ``view`` as Markdown; every dataset text escaped."""
    e = escape_cell
    core = "\n".join(f"- {e(a)}" for a in view.core_attributes)
    spurious = "\n".join(f"- {e(a)}" for a in view.spurious_attributes)
    types = ", ".join(TYPE_LABEL[t] for t in view.spurious_types)
    correct = view.options[ANSWER_LETTERS.index(view.answer)]
    return (
        f"### Item {code_span(view.id)}\n\n"
        f"**Question:** {e(view.question)}\n\n"
        f"**Correct answer:** {view.answer}. {e(correct)}\n\n"
        f"**Class:** {e(view.class_name)} · **Source:** {e(view.source)} · **Spurious types:** {types}\n\n"
        f"**Core attributes** (of the class)\n\n{core}\n\n"
        f"**Spurious attributes** (in the picture)\n\n{spurious}\n"
    )
