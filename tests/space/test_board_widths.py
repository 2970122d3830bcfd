"""The leaderboard's columns are wide enough for every figure and every word at 1400 pixels."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from mmspubench.space import board_widths
from mmspubench.space.board_widths import CHAR_PX, PAD_PX, TABLE_PX, column_widths, min_width, words
from mmspubench.space.leaderboard import DEFAULT_COLUMNS, TYPE_COLUMNS


def _frame(model: str = "[org/m](https://huggingface.co/org/m)") -> pd.DataFrame:
    row: dict[str, object] = {c: 100.0 for c in DEFAULT_COLUMNS}
    row.update(
        Model=model,
        Mode="generate (accuracy only), partial (n=2 of 90)",
        Variant="attribute-hint (ceiling)",
        Source="Hub leaderboard (verified): Overall and Hub Overall",
        **{"Hub Overall": math.nan},
    )
    return pd.DataFrame([row], columns=list(DEFAULT_COLUMNS))


def _pixels(columns: list[str], frame: pd.DataFrame) -> dict[str, float]:
    return {
        c: float(w.rstrip("%")) * TABLE_PX / 100
        for c, w in zip(columns, column_widths(columns, frame), strict=True)
    }


def test_words_split_where_a_browser_may_break() -> None:
    assert words("attribute-hint (ceiling)") == ["attribute-", "hint", "(ceiling)"]
    assert words("2026-12-02 +25.00") == ["2026-12-02", "+25.00"]  # never before a digit


@pytest.mark.parametrize("model", ["[org/m](https://huggingface.co/org/m)", "x" * 300])
def test_every_default_column_holds_its_longest_word(model: str) -> None:
    columns = list(DEFAULT_COLUMNS)
    shown = _pixels(columns, _frame(model))
    assert sum(shown.values()) == pytest.approx(TABLE_PX, abs=0.1)
    for column in columns:
        assert shown[column] >= min_width(column, list(_frame(model)[column])) - 0.1, column
    for column in (*TYPE_COLUMNS, "Average", "Overall", "CGLA_acc"):  # 100.00, Average, CGLA_acc
        longest = max(len("100.00"), len(column))
        assert shown[column] >= longest * CHAR_PX + 2 * PAD_PX, column
    # a 300-character name widens its column up to the cap only: it breaks, the figures do not
    assert shown["Model"] < TABLE_PX / 3


def test_the_page_sets_the_font_and_padding_the_widths_assume() -> None:
    from mmspubench.space.layout import LAUNCH_OPTIONS

    css = LAUNCH_OPTIONS["css"]
    assert css == board_widths.BOARD_CSS
    assert f"font-size: {board_widths.FONT_PX}px" in css and f"padding-left: {PAD_PX}px" in css
