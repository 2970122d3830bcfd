from __future__ import annotations

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space.explore import (
    ALL,
    build_index,
    filter_choices,
    filter_items,
    item_markdown,
    item_view,
    options_table,
)

from .fixtures import make_dataset


@pytest.fixture(scope="module")
def dataset():  # type: ignore[no-untyped-def]
    return make_dataset()


def test_index_names_types_and_sources(dataset) -> None:  # type: ignore[no-untyped-def]
    index = build_index(dataset)
    assert list(index.frame["id"]) == ["000000", "000001", "000002"]
    assert index.frame.loc[0, "types"] == "Background, Lighting and Shadows"
    assert index.frame.loc[2, "source"] == "ObjectNet"
    assert index.row_of == {"000000": 0, "000001": 1, "000002": 2}


def test_filter_choices_only_present_values(dataset) -> None:  # type: ignore[no-untyped-def]
    types, sources, classes = filter_choices(build_index(dataset))
    assert types == [
        ALL,  # the empty type filter reads "(all)" like the others
        "Background (BG)",
        "Texture and Noise (TN)",
        "Orientation (Ori.)",
        "Lighting and Shadows (LS)",
    ]
    assert sources == [ALL, "ObjectNet", "synthetic"]
    assert classes == [ALL, "cup", "dog", "fish"]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ["000000", "000001", "000002"]),
        ({"types": ["Lighting and Shadows (LS)"]}, ["000000"]),
        ({"types": [ALL]}, ["000000", "000001", "000002"]),
        ({"types": [ALL, "Lighting and Shadows (LS)"]}, ["000000"]),
        ({"types": ["orientation", "texture_noise"]}, ["000001", "000002"]),
        ({"source": "synthetic"}, ["000000", "000001"]),
        ({"source": ALL, "class_name": "fish"}, ["000002"]),
        ({"types": ["background"], "source": "ObjectNet"}, []),
        ({"query": "UPSIDE"}, ["000001"]),
        ({"query": "000002"}, ["000002"]),
    ],
)
def test_filter_items(dataset, kwargs, expected) -> None:  # type: ignore[no-untyped-def]
    assert list(filter_items(build_index(dataset), **kwargs)["id"]) == expected


def test_filter_rejects_unknown_type(dataset) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MMSpuBenchError, match="unknown spurious type 'weather'"):
        filter_items(build_index(dataset), types=["weather"])


def test_item_view_marks_the_correct_option(dataset) -> None:  # type: ignore[no-untyped-def]
    index = build_index(dataset)
    view = item_view(dataset, index, "000002")
    assert view.answer == "D"
    assert list(options_table(view)["correct"]) == ["", "", "", "✓"]
    assert list(options_table(view)["option"]) == ["a zebra", "a horse", "a tiger", "a fish"]
    assert view.core_attributes == ("fins", "scales", "tail")
    assert view.spurious_types == ("texture_noise",)
    assert view.pil_image.size == (32, 24)
    assert view.pil_image.getpixel((0, 0)) == (10, 200, 30)
    text = item_markdown(view)
    assert "**Correct answer:** D. a fish" in text
    assert "- striped texture" in text
    assert "Texture and Noise (TN)" in text


def test_item_view_unknown_id(dataset) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MMSpuBenchError, match="no item with id '999999'"):
        item_view(dataset, build_index(dataset), "999999")
