"""No list of the built-in views outside their packages: the registry is the one list.

A module outside ``eval/views/`` that holds a tuple, list or set naming two or more of the built-in
views (their ``--metrics`` names or sample keys) is a second list that a new view would have to
join; each view's package says what it is instead (``View.paper``, ``View.kept_on_rerun``,
``View.closing``, ``View.check_record``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from mmspubench.eval.views import registry
from mmspubench.eval.views.plugin import View

ROOT = Path(__file__).resolve().parents[3]
SOURCE_DIRS = ("eval", "space", "sweep", "curate", "dataset_builder", "mmspubench")
"""The package's source folders (tests, bench and docs apart)."""
ALLOWED: dict[tuple[str, tuple[str, ...]], str] = {
    ("eval/submit/submission.py", ("accuracy", "blind")): (
        "TASK_FIGURES: (section, key) pairs of eval.yaml's tasks; 'accuracy' is the blind section's key"
    ),
    ("mmspubench/integrations/ingest/run.py", ("accuracy", "blind")): (
        "VIEW_FIGURES: (section, key) pairs; 'accuracy' is a key inside the blind section"
    ),
    ("mmspubench/integrations/ingest/run.py", ("accuracy", "circular")): (
        "VIEW_FIGURES: (section, key) pairs; 'accuracy' is a key inside the circular section"
    ),
    ("eval/analysis/compare/paired.py", ("blind", "circular")): (
        "CONFOUND_FIGURES: keys of compare's group JSON (circular, blind, gain, brier, ece), not views"
    ),
    ("mmspubench/integrations/cli.py", ("blind", "circular")): (
        "the harness adapters name the task arguments they read (Inspect's circular/blind flags)"
    ),
    ("mmspubench/integrations/ingest/sources.py", ("blind", "circular")): (
        "the harness adapters name the task arguments they read (Inspect's circular/blind flags)"
    ),
    ("mmspubench/integrations/ingest/interventions.py", ("accuracy", "interventions")): (
        "the intervention adapter builds the one config whose images it re-derives"
    ),
}
"""(module, the built-in names it lists) -> why that display is not a list of views."""
BUILTIN = list(registry.VIEWS.values())
"""The built-in views: read at import, before a test's own view can be registered."""


def _names(views: list[View]) -> set[str]:
    return {v.name for v in views} | {v.part.key for v in views if v.part is not None}


def lists_of_views(path: Path, names: set[str]) -> list[tuple[int, tuple[str, ...]]]:
    """``(line, names)`` of each tuple, list or set display in ``path`` naming 2+ of ``names``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            named = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names}
            if len(named) >= 2:
                found.append((node.lineno, tuple(sorted(named))))
    return found


def test_no_module_outside_the_views_lists_the_built_in_views() -> None:
    names = _names(BUILTIN)
    bad = [
        f"{rel}:{line} lists {', '.join(named)}"
        for folder in SOURCE_DIRS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not (rel := path.relative_to(ROOT).as_posix()).startswith("eval/views/")
        for line, named in lists_of_views(path, names)
        if (rel, named) not in ALLOWED
    ]
    assert bad == []


def test_every_allowed_list_is_still_there() -> None:
    """An allowance whose list is gone is removed with it."""
    names = _names(BUILTIN)
    stale = [
        key for key in ALLOWED if key[1] not in {named for _, named in lists_of_views(ROOT / key[0], names)}
    ]
    assert stale == []


def test_the_check_sees_a_list_of_views(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        'SECTIONS = ("circular", "blind")\nKEYS = {"rotations", "option_probs"}\n', encoding="utf-8"
    )
    names = _names(BUILTIN)
    assert lists_of_views(bad, names) == [(1, ("blind", "circular")), (2, ("option_probs", "rotations"))]
    good = tmp_path / "good.py"
    good.write_text('PAIR = ("blind", "gain")\n', encoding="utf-8")
    assert lists_of_views(good, names) == []
