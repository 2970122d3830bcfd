"""Text from a run, a dataset or a user, made safe to put into Markdown or HTML.

Every page that renders Markdown or HTML (the Space's leaderboard, item view, CGLA view and submit
messages; curate's review app) passes such text through ``escape_markdown``, and builds links only
with ``hub_link``, which links nothing but an id it has checked itself. The module imports nothing
of the package, so every part may use it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

_HUB_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")
"""One component of a Hub id: ASCII letters, digits, ``-``, ``_``, ``.``; no leading or trailing
``-``/``.``; at most 96 characters (the Hub's own rules)."""
HUB_URL = "https://huggingface.co"
_KIND_PATH = {"model": "", "dataset": "datasets/", "space": "spaces/"}
"""URL prefix of each kind of Hub repository."""
_PLAIN = "/,;?'\"@%^-"
"""Punctuation that starts no Markdown or HTML construct in element text: kept, so ids and
sentences stay readable (``org/model-a``); a ``-`` opening a line (a list item, a rule) is
escaped on its own."""
_LINE_DASH = re.compile(r"^([ \t]*)-", re.MULTILINE)
_ENTITIES = {ord(c): f"&#{ord(c)};" for c in string.punctuation if c not in _PLAIN}
"""Every other ASCII punctuation character as a numeric character reference: Markdown and HTML
both show it as the character and neither reads it as markup (no tag, link, image, emphasis,
heading, list, table cell or autolinked URL can form), so one escaped text is safe in either
(as element text; never put it into an HTML attribute)."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
"""Control, zero-width and bidirectional-override characters: dropped (newline and tab are kept)."""


def escape_markdown(text: str) -> str:
    """``text`` shown literally when rendered as Markdown or HTML.

    Punctuation becomes numeric character references and control characters are dropped; line
    breaks stay (use ``escape_cell`` for a table cell or a single line).
    """
    return _LINE_DASH.sub(r"\1&#45;", _CONTROL.sub("", str(text)).translate(_ENTITIES))


def escape_html(text: str) -> str:
    """``text`` shown literally as the content of an HTML element (``<``, ``>``, ``&`` escaped,
    control characters dropped; quotes kept, so a message stays readable): never an attribute value."""
    return _CONTROL.sub("", str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code_block(text: str, info: str = "text") -> str:
    """``text`` as a fenced Markdown code block, shown verbatim: the fence is longer than any run of
    backticks inside, so no content can close it (CommonMark), and nothing inside is markup."""
    longest = max((len(run) for run in re.findall(r"`+", str(text))), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{_CONTROL.sub('', str(text))}\n{fence}"


def code_span(text: str) -> str:
    """``text`` as inline Markdown code, shown verbatim: delimited by more backticks than any run
    inside (padded with a space where the text starts or ends with one), on one line."""
    flat = " ".join(_CONTROL.sub("", str(text)).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def escape_cell(text: str) -> str:
    """``escape_markdown`` for one Markdown table cell or one line: line breaks become spaces."""
    return escape_markdown(" ".join(str(text).splitlines()))


def is_valid_hub_id(repo_id: str) -> bool:
    """Whether ``repo_id`` is ``name`` or ``org/name`` by the Hub's rules (ASCII only, no ``--``/``..``)."""
    parts = repo_id.split("/")
    if not 1 <= len(parts) <= 2:
        return False
    return all(_HUB_PART.fullmatch(p) is not None and "--" not in p and ".." not in p for p in parts)


def hub_link(repo_id: str, kind: str = "model") -> str:
    """A Markdown link to the Hub page of ``repo_id`` (``kind``: model, dataset or space) when it is a
    valid ``org/name`` id; otherwise the id as escaped text, linked to nothing."""
    if kind not in _KIND_PATH:
        raise ValueError(f"kind must be one of {sorted(_KIND_PATH)}, not {kind!r}")
    label = escape_cell(repo_id)
    if "/" not in repo_id or not is_valid_hub_id(repo_id):
        return label
    return f"[{label}]({HUB_URL}/{_KIND_PATH[kind]}{repo_id})"


def is_hub_model(model: Mapping[str, Any]) -> bool:
    """Whether a results.json ``model`` section names a Hub model repo (then pages link it and
    submit checks it against ``--model-repo``): its ``id`` is a valid ``org/name`` id, and the run
    does not say otherwise. ``mmspubench ingest`` writes ``hub_repo``: the Hub id, or ``null`` for
    a harness's own model name that only looks like one (Inspect's ``openai/gpt-4o-mini``,
    ``mockllm/model``); runs of ``mmspubench eval`` carry no ``hub_repo`` and are judged by their id."""
    model_id = model.get("id")
    if not isinstance(model_id, str) or "/" not in model_id or not is_valid_hub_id(model_id):
        return False
    return model.get("hub_repo", model_id) == model_id
