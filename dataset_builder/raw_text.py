"""Unicode rules for the raw release's ids and options.

Two texts that look the same must not count as two: ``café`` written precomposed (NFC) and
decomposed (NFD), full-width letters, or a word with a zero-width space inside all compare equal
after ``fold``. Ids are names that reach file names and error lines, so they may hold no control,
format (zero-width), private-use, unassigned or line-separator character at all.
"""

from __future__ import annotations

import unicodedata

from mmspubench.errors import MMSpuBenchError, record_error

FORBIDDEN_IN_IDS: frozenset[str] = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories refused in an id: control (NUL, newline, ESC...), format (zero-width
characters, bidi controls), surrogate, private use, unassigned, line and paragraph separators."""


def fold(text: str) -> str:
    """``text`` for equality tests: NFKC, format characters dropped, case-folded, spaces collapsed."""
    normal = unicodedata.normalize("NFKC", text)
    visible = "".join(ch for ch in normal if unicodedata.category(ch) != "Cf")
    return " ".join(unicodedata.normalize("NFKC", visible.casefold()).split())


def id_key(record_id: str) -> str:
    """The form two ids are compared in: equal ids after NFKC normalisation are one id."""
    return unicodedata.normalize("NFKC", record_id)


def check_id_text(file: str, label: str, text: str) -> None:
    """Refuse an id holding a character of ``FORBIDDEN_IN_IDS``, naming it by code point."""
    for position, ch in enumerate(text):
        category = unicodedata.category(ch)
        if category in FORBIDDEN_IN_IDS:
            raise record_error(
                file,
                label,
                "id",
                f"id {text!r} holds U+{ord(ch):04X} ({unicodedata.name(ch, category)}) at position "
                f"{position}; ids may hold no control, zero-width or separator characters",
            )


def check_plain_text(file: str, label: str, field: str, text: str) -> None:
    """Refuse a text field holding a control character (ESC, NUL, a carriage return...): such text
    would drive a terminal or break a line wherever it is shown. Line breaks and tabs are allowed."""
    for position, ch in enumerate(text):
        if unicodedata.category(ch) == "Cc" and ch not in "\n\t":
            raise record_error(
                file,
                label,
                field,
                f"text holds control character U+{ord(ch):04X} at position {position}; texts may hold "
                "no control characters but line breaks and tabs",
            )


def duplicate_id_error(file: str, record_id: str, first: str) -> MMSpuBenchError:
    """The error for an id seen before (``first``), equal or equal after normalisation."""
    if record_id == first:
        return record_error(file, record_id, "id", "duplicate id; ids must be unique")
    return record_error(
        file,
        record_id,
        "id",
        f"duplicate id: equal to id {first!r} after Unicode normalisation (NFKC); ids must be unique",
    )
