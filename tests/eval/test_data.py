from __future__ import annotations

from typing import Any

import datasets
import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import data

from tests.eval.fakes import make_dataset, make_rows


def test_rows_become_items_with_names() -> None:
    items = data.load_items(make_dataset(4), None, "fixture")
    first = items[0]
    assert first.id == "000000" and first.answer == "A" and first.source == "synthetic"
    assert first.spurious_types == ("background", "colorization")  # ClassLabel ints 0 and 4
    assert items[1].spurious_types == ("texture_noise",)
    assert first.options == ("a red car", "a blue bus", "a green bike", "a yellow taxi")
    assert first.core_attributes == ("core 0-0",) and items[2].core_attributes == (
        "core 2-0",
        "core 2-1",
        "core 2-2",
    )
    assert first.image.mode == "RGB" and first.image.size == (16, 16)


def test_limit_and_ids() -> None:
    ds = make_dataset(5)
    assert data.item_ids(ds, 2) == ["000000", "000001"]
    assert data.item_ids(ds, 50) == [f"{i:06d}" for i in range(5)]
    for bad in (0, -1):
        with pytest.raises(MMSpuBenchError, match="--limit"):
            data.item_ids(ds, bad)
    items = list(data.iter_items(ds, ["000003", "000001"], "fixture"))
    assert [i.id for i in items] == ["000003", "000001"]
    with pytest.raises(MMSpuBenchError, match=r"'000009'.*not found"):
        list(data.iter_items(ds, ["000009"], "fixture"))


def test_duplicate_ids_are_rejected() -> None:
    rows = make_rows(3)
    rows[2]["id"] = rows[0]["id"]
    ds = datasets.Dataset.from_list(rows, features=make_dataset(1).features)
    with pytest.raises(MMSpuBenchError, match="duplicate id"):
        data.item_ids(ds, None)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("answer", 7, "field 'answer': bad value 7"),
        ("answer", "E", "field 'answer': bad value 'E'"),
        ("options", ["a", "b", "c"], "field 'options': has 3 entries"),
        ("core_attributes", [], "field 'core_attributes': has 0 entries"),
        ("spurious_attributes", "not a list", "field 'spurious_attributes': bad value"),
        ("spurious_types", [], "field 'spurious_types'"),
        ("spurious_types", ["weather"], "field 'spurious_types': bad value 'weather'"),
        ("image", None, "field 'image'"),
    ],
)
def test_malformed_rows_name_file_record_and_field(field: str, value: Any, message: str) -> None:
    row = dict(make_rows(1)[0])
    row[field] = value
    with pytest.raises(MMSpuBenchError, match=f"^fixture: record '000000': {message}"):
        data.row_to_item(row, "fixture")


def test_hand_made_rows_with_names_are_accepted() -> None:
    row = dict(make_rows(1)[0], answer="C", spurious_types=["shape"], source="ObjectNet")
    item = data.row_to_item(row, "fixture")
    assert (item.answer, item.spurious_types, item.source) == ("C", ("shape",), "ObjectNet")


def test_missing_column_is_named() -> None:
    with pytest.raises(MMSpuBenchError, match=r"fixture: missing required field.*spurious_types"):
        data.check_columns(make_dataset(2).remove_columns(["spurious_types"]), "fixture")
