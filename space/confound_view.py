"""The confound views of one item in a results run: its four rotations and its blind answer.

Input is one ``samples.jsonl`` record (docs/DESIGN.md, "Result files"): ``rotations`` (four objects
``{rotation, order, answer, prediction, correct, ...}``, ``order`` the published option index shown
at A-D) and ``blind`` (``{prediction, correct, ...}``), each present only in a run that asked for it,
and the item's published ``options`` for the option texts. Plain functions; every text escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.markup import escape_cell

ROTATION_COLUMNS: tuple[str, ...] = (
    "rotation",
    "shown A-D",
    "gold",
    "prediction",
    "option chosen",
    "correct",
)
"""Columns of :func:`rotation_rows`: ``shown A-D`` names the published option letter shown at each
position (rotation 1 shows published D at A: ``D A B C``)."""


def _letter(value: Any) -> str | None:
    return value if isinstance(value, str) and value in ANSWER_LETTERS else None


def _option_text(order: Sequence[Any], shown: str | None, options: Sequence[str]) -> str:
    """The published option text a shown letter names (``—``: unparsed or unknown)."""
    if shown is None:
        return "— (unparsed)"
    k = ANSWER_LETTERS.index(shown)
    if k >= len(order) or not isinstance(order[k], int) or not 0 <= order[k] < len(options):
        return "—"
    return str(options[order[k]])


def rotation_rows(record: Mapping[str, Any], options: Sequence[str]) -> list[list[str]]:
    """One row per rotation (:data:`ROTATION_COLUMNS`); empty when the run has no rotations."""
    rows = []
    for r in record.get("rotations") or ():
        if not isinstance(r, Mapping):
            continue
        given = r.get("order")
        order: list[Any] = given if isinstance(given, list) else []
        shown = " ".join(
            ANSWER_LETTERS[j] if isinstance(j, int) and 0 <= j < len(ANSWER_LETTERS) else "?" for j in order
        )
        prediction = _letter(r.get("prediction"))
        rows.append(
            [
                str(r.get("rotation")),
                shown,
                str(r.get("answer")),
                prediction or "—",
                _option_text(order, prediction, options),
                "✓" if r.get("correct") is True else "✗",
            ]
        )
    return rows


def blind_line(record: Mapping[str, Any], options: Sequence[str], image: str = "none") -> str:
    """The blind answer in one sentence; empty when the run has no blind answer."""
    blind = record.get("blind")
    if not isinstance(blind, Mapping):
        return ""
    how = "with a mid-grey image" if image == "grey" else "without the image"
    prediction = _letter(blind.get("prediction"))
    if prediction is None:
        return f"**Blind** ({how}): no option could be read from the answer (counted wrong)."
    text = escape_cell(_option_text(list(range(len(options))), prediction, options))
    verdict = "right" if blind.get("correct") is True else "wrong"
    return f"**Blind** ({how}): {prediction}. {text} ({verdict})."


def confounds_markdown(record: Mapping[str, Any], options: Sequence[str], image: str = "none") -> str:
    """The rotations as a Markdown table and the blind answer; empty when the run has neither."""
    rows = rotation_rows(record, options)
    parts = []
    if rows:
        right = sum(row[-1] == "✓" for row in rows)
        verdict = (
            "right under the circular rule" if right == len(rows) == 4 else "wrong under the circular rule"
        )
        table = ["| " + " | ".join(ROTATION_COLUMNS) + " |", "|" + "---|" * len(ROTATION_COLUMNS)]
        table += ["| " + " | ".join(escape_cell(cell) for cell in row) + " |" for row in rows]
        parts.append(f"**Rotations** ({right} of {len(rows)} right: {verdict})\n\n" + "\n".join(table))
    line = blind_line(record, options, image)
    if line:
        parts.append(line)
    return "\n\n".join(parts)
