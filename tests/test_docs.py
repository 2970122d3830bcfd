"""The documentation site: its examples run as written, its option tables are the parsers', and the
strict build fails on a broken link.

Python blocks of the pages are exec'd in a temporary folder; shell blocks marked ``runnable`` run
with bash, offline, on the bundled model and release, in a temporary folder (markers:
``tests/docs_examples.py``). ``make docs`` (CI) builds the whole site with ``mkdocs build --strict``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from mmspubench.cli import build_parser

from tests.docs_examples import (
    DOCS,
    README,
    ROOT,
    Block,
    OptionRow,
    all_blocks,
    command_lines,
    option_tables,
    pages,
)

BLOCKS = [b for b in all_blocks() if b.runnable and b.page != README]
PYTHON = [b for b in BLOCKS if b.lang == "python"]
SHELL = [b for b in BLOCKS if b.lang != "python"]


def _param(block: Block) -> object:
    return pytest.param(block, id=block.name, marks=[pytest.mark.slow] if block.slow else [])


def test_the_docs_have_runnable_examples_of_both_kinds() -> None:
    assert len(PYTHON) >= 5 and len(SHELL) >= 3, (len(PYTHON), len(SHELL))


@pytest.mark.parametrize("block", [_param(b) for b in PYTHON])
def test_docs_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    module = types.ModuleType("__docs__")  # a real module: dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(block.body, block.name, "exec"), module.__dict__)


@pytest.mark.parametrize("block", [_param(b) for b in SHELL])
def test_docs_shell_block_runs(block: Block, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.body],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{block.name} failed:\n{block.body}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    check_printed(block, done.stdout + done.stderr)


CHECKS = re.compile(r"(?:^|[\s;&|(])(?:grep -q|test |\[ |cmp |diff |python -c)")
"""Commands that check what a block made (its exit status says whether the check held)."""


def check_printed(block: Block, printed: str) -> None:
    """What a runnable block printed holds its ``<!-- prints -->`` lines in order; without one, it
    printed something or checked what it made."""
    if block.prints is None:
        assert printed.strip() or CHECKS.search(block.body), (
            f"{block.name} printed nothing and checks nothing: add a <!-- prints --> block or a check"
        )
        return
    lines = printed.splitlines()
    at = 0
    for wanted in (line.strip() for line in block.prints.splitlines() if line.strip()):
        while at < len(lines) and wanted not in lines[at]:
            at += 1
        assert at < len(lines), (
            f"{block.name}: {wanted!r} not printed (in order); it printed:\n{printed[-3000:]}"
        )
        at += 1


def test_a_block_that_prints_nothing_or_else_fails_its_test() -> None:
    """The checks of what a block printed can fail."""
    silent = Block(DOCS / "index.md", 0, "bash", "runnable", "true\n")
    with pytest.raises(AssertionError, match="printed nothing and checks nothing"):
        check_printed(silent, "")
    check_printed(Block(DOCS / "index.md", 0, "bash", "runnable", "test -f x\n"), "")
    expecting = replace(silent, prints="first\nsecond\n")
    check_printed(expecting, "a first line\nthen the second\n")
    with pytest.raises(AssertionError, match="'second' not printed"):
        check_printed(expecting, "the second\nthen first\n")


def test_a_failing_shell_block_fails_its_test(tmp_path: Path) -> None:
    """The runner stops at the first failing command (bash -e), as a broken example must."""
    broken = Block(DOCS / "index.md", 0, "bash", "runnable", "false\necho reached\n")
    with pytest.raises(AssertionError, match="failed"):
        test_docs_shell_block_runs(broken, tmp_path)


# Commands and options: what the pages write is what the parsers take.


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> dict[str, argparse.ArgumentParser]:
    """``mmspubench COMMAND ...`` -> its parser, for every command that takes arguments."""
    found: dict[str, argparse.ArgumentParser] = {}
    if any(
        a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ):
        found[" ".join(path)] = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_leaves(sub, (*path, name)))
    return found


COMMANDS = {name: p for name, p in _leaves(build_parser(), ("mmspubench",)).items() if name != "mmspubench"}


def _arguments(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every argument of a parser by the name its table uses (``--flag`` or ``METAVAR``)."""
    names: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            names.update(dict.fromkeys(action.option_strings, action))
        else:
            metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
            names[metavar] = action
    return names


def test_every_command_has_one_options_table_somewhere_in_the_docs() -> None:
    tables = option_tables()
    assert set(COMMANDS) - set(tables) == set(), "commands with no options table in docs/"
    assert set(tables) - set(COMMANDS) == set(), "options tables of commands that do not exist"
    assert [name for name, found in tables.items() if len(found) != 1] == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_options_table_matches_the_parser(command: str) -> None:
    """Every argument of the command has a row, every row is an argument, choices and defaults agree."""
    (page, rows), *_ = option_tables()[command]
    arguments = _arguments(COMMANDS[command])
    where = f"{page.relative_to(ROOT)} ({command})"
    written = {row.name for row in rows}
    assert written - set(arguments) == set(), f"{where}: rows for arguments the parser does not have"
    missing = {_label(a) for a in arguments.values() if not written & _names(a)}
    assert missing == set(), f"{where}: arguments missing from the table"
    for row in rows:
        _check_row(row, arguments[row.name], where)


def _names(action: argparse.Action) -> set[str]:
    """What a table row may call the argument: any of its flags, or a positional's name."""
    return set(action.option_strings) or {
        action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    }


def _label(action: argparse.Action) -> str:
    return max(_names(action), key=len)


def _check_row(row: OptionRow, action: argparse.Action, where: str) -> None:
    """Choices as the parser's; a literal default the parser has is the one written."""
    parser_choices = tuple(map(str, action.choices)) if action.choices else None
    assert row.choices == parser_choices, (
        f"{where}: {row.name} choices {row.choices} vs parser {parser_choices}"
    )
    default = action.default
    if default is None or isinstance(default, bool) or default == argparse.SUPPRESS:
        return
    shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
    if shown == "":  # an empty default (no GPUs, no types) has no literal to write
        return
    assert f"`{shown}`" in row.default, (
        f"{where}: {row.name} default is {shown!r}, the table says {row.default!r}"
    )


def _check_command_line(line: str) -> list[str]:
    """Problems with one written ``mmspubench ...`` command: an unknown command or option."""
    words = [w for w in re.split(r"\s+", line.strip()) if w]
    path, parser = ["mmspubench"], build_parser()
    for word in words[1:]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        path.append(word)
        parser = subs[0].choices[word]
    if len(path) == 1 and len(words) > 1 and re.fullmatch(r"[a-z][a-z-]*", words[1]):
        return [f"unknown command {' '.join(words[:2])!r}"]
    known = {s for a in parser._actions for s in a.option_strings}
    flags = {w.split("=", 1)[0] for w in words if re.fullmatch(r"--[a-z][a-z0-9-]*(=.*)?", w)}
    return [f"{' '.join(path)}: no option {flag}" for flag in sorted(flags - known)]


@pytest.mark.parametrize("page", [README, *pages()], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_written_on_a_page_uses_options_that_exist(page: Path) -> None:
    problems = [f"{line!r}: {p}" for line in command_lines(page) for p in _check_command_line(line)]
    assert problems == []


def test_the_command_check_catches_a_stale_option() -> None:
    assert _check_command_line("mmspubench eval --model m --old-flag 3 --out x") == [
        "mmspubench eval: no option --old-flag"
    ]
    assert _check_command_line("mmspubench evaluate --out x") == ["unknown command 'mmspubench evaluate'"]
    assert _check_command_line("mmspubench space build --out s --overwrite") == []
    assert (
        _check_command_line("mmspubench space: stopped (SIGTERM|Ctrl-C)") == []
    )  # printed text, not a command


# The site: every page in the nav, and the strict build fails on a broken link.

MKDOCS = ROOT / "mkdocs.yml"
needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed: pip install -e '.[docs]'"
)


def _nav_files(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in _nav_files(value)]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    return []


def _config() -> dict[str, object]:
    """mkdocs.yml without its `!!python/name` tags (it has none today; safe_load would refuse them)."""
    return yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    nav = _nav_files(_config()["nav"])
    assert sorted(nav) == sorted(str(p.relative_to(DOCS)) for p in [*pages()]), "nav and docs/ differ"
    assert "DESIGN.md" in nav


def test_code_blocks_wrap_at_the_content_edge() -> None:
    """At 1400 px, 91 code blocks of 35 pages ran past the right edge: the site's stylesheet wraps
    every block's lines (the strict build test checks that a page links it)."""
    sheets = str(_config().get("extra_css"))
    assert "stylesheets/extra.css" in sheets
    css = (DOCS / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    rule = re.search(r"\.md-typeset pre > code \{([^}]*)\}", css)
    assert rule and "white-space: pre-wrap" in rule.group(1) and "overflow-wrap: anywhere" in rule.group(1)


def _make_docs_env() -> dict[str, str]:
    """The variables ``make docs`` sets for mkdocs (its recipe's ``NAME=value`` words)."""
    recipe = re.search(
        r"^docs: .*\n\t((?:\w+=\S+ )*)\$\(BIN\)/mkdocs build", (ROOT / "Makefile").read_text(), re.M
    )
    assert recipe, "make docs runs mkdocs build"
    return dict(word.split("=", 1) for word in recipe.group(1).split())


def _mkdocs_build(site: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_MKDOCS_2_WARNING"} | _make_docs_env()
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(site / "mkdocs.yml")]
    return subprocess.run(command, cwd=site, capture_output=True, text=True, timeout=300, env=env)


@needs_mkdocs
def test_the_strict_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """The site's own config, on two pages: it builds, and fails once a page links to a missing one."""
    config = _config()
    config.update(nav=["index.md", "other.md"], docs_dir="docs", site_dir="site")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "docs").mkdir()
    shutil.copy2(DOCS / "griffe_package_dir.py", tmp_path / "docs" / "griffe_package_dir.py")
    shutil.copytree(DOCS / "stylesheets", tmp_path / "docs" / "stylesheets")
    (tmp_path / "docs" / "index.md").write_text(
        "# Home\n\nSee [the other page](other.md).\n", encoding="utf-8"
    )
    (tmp_path / "docs" / "other.md").write_text("# Other\n\nBack [home](index.md#home).\n", encoding="utf-8")
    good = _mkdocs_build(tmp_path)
    assert good.returncode == 0, good.stderr
    # as make docs runs it: no end-of-life banner of the theme among the build's lines
    assert "end of life" not in good.stdout + good.stderr
    assert 'href="stylesheets/extra.css"' in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    (tmp_path / "docs" / "other.md").write_text("# Other\n\nSee [a page](missing.md).\n", encoding="utf-8")
    broken = _mkdocs_build(tmp_path)
    assert broken.returncode != 0
    assert "contains a link 'missing.md', but the target is not found" in broken.stderr
    assert "Aborted with 1 warnings in strict mode" in broken.stdout + broken.stderr
    (tmp_path / "docs" / "other.md").write_text(
        "# Other\n\nSee [a part](index.md#nowhere).\n", encoding="utf-8"
    )
    assert _mkdocs_build(tmp_path).returncode != 0  # a missing anchor fails too


def test_make_docs_builds_strictly_and_ci_runs_it() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs: \$\(VENV\)/\.stamp-docs\n\t.*\$\(BIN\)/mkdocs build --strict", makefile, re.M)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert ci.index("make docs VENV=.venv-ci") > ci.index("make test VENV=.venv-ci")
    assert shlex.split("make docs VENV=.venv-ci") == ["make", "docs", "VENV=.venv-ci"]
