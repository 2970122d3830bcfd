"""Annotator names: one person is one name, whatever invisible or look-alike form it is typed in.

``--min-annotators`` counts people, so ``alice``, ``alice\\u200b`` (a zero-width space), ``ALICE``
and ``ａｌｉｃｅ`` (full-width) must be one annotator. A name is normalised once, on the server, for
every use: Unicode NFKC (full-width and compatibility forms to their plain letters), format and
control characters removed (zero-width spaces and joiners, direction marks, BOM, soft hyphen, C0/C1),
every run of white space one space, ends stripped. The identity of a name is its case-folded
form; the normalised form is what is stored and shown. Homoglyphs across scripts (a Cyrillic
``а`` for a Latin ``a``) stay distinct: telling them apart is not something a normaliser can do.
"""

from __future__ import annotations

import unicodedata

from mmspubench.errors import MMSpuBenchError

MAX_NAME = 64
"""Longest annotator name, in characters after normalisation (the page's field caps at the same)."""
MAX_RAW_NAME = 4 * MAX_NAME
"""Longest name accepted as typed, before normalisation (bounds the work on a hostile request)."""
_DROPPED = {"Cc", "Cf", "Cs", "Co", "Cn"}
"""Unicode categories removed: control, format (zero-width, direction marks), surrogate, private
use, unassigned. White-space controls (tab, newline) become spaces first."""


def normalise_name(raw: object) -> str:
    """The stored and shown form of an annotator name; raises on an empty or over-long name."""
    if not isinstance(raw, str):
        raise MMSpuBenchError(f"annotator name {raw!r} is not text; enter your name")
    if len(raw) > MAX_RAW_NAME:
        raise MMSpuBenchError(f"annotator name has {len(raw)} characters; at most {MAX_NAME} are allowed")
    text = unicodedata.normalize("NFKC", raw)
    text = "".join(
        " " if c.isspace() else c for c in text if c.isspace() or unicodedata.category(c) not in _DROPPED
    )
    name = " ".join(text.split())
    if not name:
        raise MMSpuBenchError("annotator name is empty; enter your name first")
    if len(name) > MAX_NAME:
        raise MMSpuBenchError(f"annotator name has {len(name)} characters; at most {MAX_NAME} are allowed")
    return name


def name_key(name: str) -> str:
    """The identity of a name: two names are one annotator when their keys are equal."""
    return unicodedata.normalize("NFKC", normalise_name(name).casefold())
