"""The leaderboard table's column widths and style: no figure and no word of a header or a cell
wraps at a 1400-pixel-wide window.

Gradio gives each column a share of the table's width and breaks a word that does not fit its
column anywhere (``overflow-wrap: break-word``): ``100.00`` read ``100.0`` over ``0`` and
``Average`` read ``Averag`` over ``e``. Here each shown column is at least as wide as its longest
word (header in bold, cells as shown, two decimals), measured in the table's monospace font;
what is left goes to the text columns. A text column's word is counted up to
:data:`WORD_CAP_PX` only: a longer one (a 300-character model name) breaks at the column's edge,
the one place a word may break.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
from mmspubench.space import leaderboard
from mmspubench.space.replies import TOKENS, tokens_text

TABLE_PX = 1212.0
"""The table's inner width in a 1400-pixel-wide window (Gradio's page in Chromium: 1213.75)."""
FONT_PX = 13
"""Font size of the table's headers and cells (Gradio's default is 14: the default columns would
not fit the width with every figure on one line)."""
CHAR_PX = 0.6 * FONT_PX
"""Advance of one character of the table's monospace font (IBM Plex Mono, or the browser's
monospace fallback such as DejaVu Sans Mono: 0.6 em)."""
PAD_PX = 4
"""Padding left and right of each cell's text (Gradio's default is 8)."""
SLACK_PX = 3.0
"""Room per column for rounding and a font a little wider than :data:`CHAR_PX`."""
WORD_CAP_PX = 16 * CHAR_PX
"""The longest word of a text column that widens it (16 characters)."""
NUMBER_COLUMNS: frozenset[str] = frozenset(
    c for c in leaderboard.ALL_COLUMNS if c not in leaderboard.TEXT_COLUMNS and c != "Model"
)
COLUMN_WEIGHTS: dict[str, int] = {
    "Model": 124, **dict.fromkeys(leaderboard.TYPE_COLUMNS, 60), "Average": 74, "Overall": 74,
    "CGLA_acc": 74, TOKENS: 66, "n": 40, "Circular": 70, "Blind": 66, "Gain": 66, "Worst": 90,
    "Mode": 100, "Variant": 110, "Scorer": 80, "Date": 96, "Dataset revision": 110, "Run": 120,
    "Revision": 110, "Hub Overall": 66, "Hub state": 76, "Source": 154, leaderboard.RANK: 60,
    **dict.fromkeys(leaderboard.INTERVENTION_COLUMNS, 70),
}  # fmt: skip
"""How the width left after every column's longest word is shared among the text columns."""
BOARD_CSS = f"""
#board-table th, #board-table .body-cell {{ font-size: {FONT_PX}px; }}
#board-table th .cell-wrap, #board-table .body-cell .cell-wrap {{
  padding-left: {PAD_PX}px; padding-right: {PAD_PX}px;
}}
"""
"""The page's style for the table (``launch(css=...)``): the font size and padding the widths assume."""
_AFTER_HYPHEN = re.compile(r"(?<=-)(?=[^\W\d_])")
"""Where a browser may break inside a word: after a hyphen followed by a letter (``core-|focus``,
never ``2026-|12``)."""


def words(text: str) -> list[str]:
    """The pieces of ``text`` a browser keeps on one line (split at spaces and after hyphens)."""
    return [piece for word in text.split() for piece in _AFTER_HYPHEN.split(word) if piece]


def shown_text(column: str, value: Any) -> str:
    """A cell as the page shows it (:func:`leaderboard.styled`): two decimals, the gain signed,
    ``Tokens`` with one decimal, a missing figure empty, the ``Model`` cell's text without its link."""
    if column == "Model":
        return leaderboard.plain_model(str(value))
    if isinstance(value, float) and math.isnan(value):
        return ""
    if column in leaderboard.SIGNED_COLUMNS and isinstance(value, (int, float)):
        return leaderboard.gain_text(value)
    if column == TOKENS and isinstance(value, (int, float)):
        return tokens_text(value)
    if column in NUMBER_COLUMNS and column != "n" and isinstance(value, (int, float)):
        return leaderboard.figure_text(value)
    return str(value)


def min_width(column: str, values: Sequence[Any] = ()) -> float:
    """Pixels for the longest word of the header and of the cells, padding and slack included."""
    pieces = [*(words(column) if column not in NUMBER_COLUMNS else column.split())]
    pieces += [w for v in values for w in words(shown_text(column, v))]
    longest = max((len(p) for p in pieces), default=0) * CHAR_PX
    if column not in NUMBER_COLUMNS:
        longest = min(longest, WORD_CAP_PX)
    return longest + 2 * PAD_PX + SLACK_PX


def column_widths(columns: Sequence[str], frame: pd.DataFrame | None = None) -> list[str]:
    """Widths (percent of the table) of the shown ``columns``: each at least its longest word
    (:func:`min_width`, the cells of ``frame`` when given), the rest of :data:`TABLE_PX` shared
    by the text columns as :data:`COLUMN_WEIGHTS` says; together exactly the table's width, so it
    is never cut on the right."""
    values = {c: list(frame[c]) if frame is not None and c in frame.columns else [] for c in columns}
    need = [min_width(c, values[c]) for c in columns]
    text = [c not in NUMBER_COLUMNS for c in columns]
    if not any(text):  # only figures shown: they share the width left
        text = [True] * len(columns)
    spare = TABLE_PX - sum(need)
    if spare > 0:
        weight = sum(COLUMN_WEIGHTS[c] for c, t in zip(columns, text, strict=True) if t)
        need = [
            n + spare * COLUMN_WEIGHTS[c] / weight if t else n
            for c, n, t in zip(columns, need, text, strict=True)
        ]
    total = sum(need)
    return [f"{100 * n / total:.3f}%" for n in need]
