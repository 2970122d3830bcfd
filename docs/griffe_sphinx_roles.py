"""A griffe extension: the Sphinx roles of the docstrings as Markdown for the site.

The docstrings cross-reference with Sphinx roles (``:class:`~mmspubench.eval.config.RunConfig```,
``:func:``, ``:meth:``...), which Markdown shows as typed. Each role becomes a cross-reference
(``[RunConfig][mmspubench.eval.config.RunConfig]``) when its target is an object the API page
renders (a ``::: identifier`` line of ``docs/api.md``: ``mkdocs build --strict`` fails on a
reference it cannot resolve), and inline code otherwise. ``~`` keeps the last name, as in Sphinx.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

API_PAGE = Path(__file__).resolve().parent / "api.md"
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`([^`]+)`")


def rendered(page: Path = API_PAGE) -> frozenset[str]:
    """The identifiers the API page renders (its ``::: identifier`` lines)."""
    return frozenset(re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), flags=re.M))


def markdown_role(text: str, targets: frozenset[str]) -> str:
    """One role's text (``~a.b.C``, ``a.b.C``, ``title <a.b.C>``) as a Markdown reference or code."""
    titled = re.fullmatch(r"(.*?)\s*<([^>]+)>", text)
    if titled:
        title, target = titled.group(1), titled.group(2).lstrip("~")
    elif text.startswith("~"):
        target = text[1:]
        title = target.rsplit(".", 1)[-1]
    else:
        title = target = text
    code = f"`{title}`"
    return f"[{code}][{target}]" if target in targets else code


def rewrite(docstring: str, targets: frozenset[str]) -> str:
    """``docstring`` with every Sphinx role replaced (see :func:`markdown_role`)."""
    return ROLE.sub(lambda found: markdown_role(found.group(1), targets), docstring)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring griffe loads."""

    def __init__(self) -> None:
        super().__init__()
        self.targets = rendered()

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, self.targets)
