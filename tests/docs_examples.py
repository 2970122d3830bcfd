"""The code blocks, command lines and option tables of the README and the documentation pages.

Markers (an HTML comment on the line before a fenced block, invisible on the page):

- ``<!-- runnable -->``: a shell block the tests run (offline, bundled model, in a temporary folder);
- ``<!-- runnable slow -->``: the same, in the slow suite;
- ``<!-- not runnable: why -->``: a block the tests do not run (a Python block is run unless so
  marked); its ``mmspubench`` command lines are still checked against the parsers;
- ``<!-- contract: what -->``: a block written from the design contract ahead of its code: neither
  run nor checked against the parsers (nor is inline code on its page);
- ``<!-- prints -->``: a ``text`` block right after a runnable one, holding what it prints: each of
  its lines must appear, in order, within the lines the block printed (stdout and stderr). A
  runnable block without one must print something or check what it made (``grep -q``, ``test``,
  ``cmp``...): an example that runs and shows nothing checks nothing.

``<!-- options: mmspubench COMMAND -->`` before a table: the reference of that command's options,
compared with its argparse parser (``tests/test_docs.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
EXCLUDED = ("notes", "figures")
"""Folders of docs/ that are not pages: contributors' notes to fold in, generated tables."""

_FENCE = re.compile(
    r"(?:^<!--\s*(?P<marker>[^>]*?)\s*-->\n)?^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```\s*$", re.M | re.S
)
_TABLE_MARKER = re.compile(r"^<!--\s*options:\s*(?P<command>[^>]+?)\s*-->\n(?P<table>(?:\|.*\n?)+)", re.M)
_INLINE = re.compile(r"`(mmspubench [^`]+)`")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    """The file it is in."""
    index: int
    """Its position among the page's blocks (0-based)."""
    lang: str
    """The fence's language (``python``, ``bash``, ``text`` ...)."""
    marker: str
    """The HTML comment just before the fence (``runnable``, ``not runnable: ...``), or ``""``."""
    body: str
    """The code."""
    prints: str | None = None
    """The text of the ``<!-- prints -->`` block right after it: what running it must print."""

    @property
    def name(self) -> str:
        """``docs/evaluate/options.md block 2``: how a test names it."""
        return f"{self.page.relative_to(ROOT)} block {self.index}"

    @property
    def runnable(self) -> bool:
        """Run by the tests: Python unless marked otherwise, shell only when marked ``runnable``."""
        if self.marker.startswith(("not runnable", "contract")):
            return False
        if self.lang == "python":
            return True
        return self.lang in {"bash", "sh"} and self.marker.startswith("runnable")

    @property
    def slow(self) -> bool:
        """Run in the slow suite only (``runnable slow``)."""
        return self.marker == "runnable slow"


def pages() -> list[Path]:
    """Every documentation page (docs/**/*.md without the excluded folders), sorted."""
    return sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in EXCLUDED)


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, in order, each with the marker written before it (and a
    runnable block with the ``<!-- prints -->`` block that follows it)."""
    text = page.read_text(encoding="utf-8")
    found = [
        Block(page, i, m.group("lang"), (m.group("marker") or "").strip(), m.group("body"))
        for i, m in enumerate(_FENCE.finditer(text))
    ]
    return [
        replace(block, prints=after.body)
        if (after := found[i + 1] if i + 1 < len(found) else None) is not None and after.marker == "prints"
        else block
        for i, block in enumerate(found)
    ]


def all_blocks() -> list[Block]:
    """The blocks of the README and of every page."""
    return [b for page in [README, *pages()] for b in blocks(page)]


def is_contract_page(page: Path) -> bool:
    """A page that holds a block written from the contract ahead of its code."""
    return any(b.marker.startswith("contract") for b in blocks(page))


def command_lines(page: Path) -> list[str]:
    """Every ``mmspubench ...`` command written on ``page``: in code blocks (not contract ones) and inline code."""
    found: list[str] = []
    for block in blocks(page):
        if block.lang in {"bash", "sh", ""} and not block.marker.startswith("contract"):
            joined = block.body.replace("\\\n", " ")
            for line in joined.splitlines():
                found.extend(_commands_in(line.split(" #", 1)[0]))
    if not is_contract_page(page):
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        found.extend(_INLINE.findall(text.replace("\n", " ")))
    return found


def _commands_in(line: str) -> list[str]:
    """The ``mmspubench`` invocations in one shell line (``a && b | c`` holds three)."""
    line = re.sub(r"-m mmspubench\.(?:eval\.)?cli\b", "mmspubench", line)
    return [
        part.strip()[part.strip().index("mmspubench ") :]
        for part in re.split(r"&&|\|\||[|;)]|\$\(", line)
        if re.search(r"(?:^|\s|\()mmspubench ", part)
    ]


@dataclass(frozen=True, slots=True)
class OptionRow:
    """One row of an options table: the argument, its choices and the default cell."""

    name: str
    """``--flag`` or the positional's name (``RUN_A``)."""
    choices: tuple[str, ...] | None
    """The ``{a,b}`` written after it, or None."""
    default: str
    """The default column's text."""


def option_tables() -> dict[str, list[tuple[Path, list[OptionRow]]]]:
    """``mmspubench COMMAND`` -> the options tables written for it (page, rows)."""
    tables: dict[str, list[tuple[Path, list[OptionRow]]]] = {}
    for page in pages():
        for m in _TABLE_MARKER.finditer(page.read_text(encoding="utf-8")):
            rows = [_row(line) for line in m.group("table").splitlines()[2:] if line.strip()]
            tables.setdefault(m.group("command"), []).append((page, rows))
    return tables


def _row(line: str) -> OptionRow:
    """An options-table row: `` | `--flag {a,b} VALUE` | `default` | help | ``."""
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    code = re.match(r"`([^`]+)`", cells[0])
    if code is None:
        raise ValueError(f"an options row must open with the argument in backticks: {line!r}")
    words = code.group(1).split()
    choices = next((w for w in words[1:] if w.startswith("{")), None)
    parsed = tuple(choices.strip("{}").split(",")) if choices else None
    return OptionRow(words[0], parsed, cells[1] if len(cells) > 1 else "")
