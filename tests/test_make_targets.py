"""After `make run` the user is told how to reach the environment's commands; `make report` runs one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_readme import ROOT, _env_without_make_vars

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A copy of the Makefile with an installed-looking .venv whose `mmspubench` echoes its arguments."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("bin/python", ".stamp-torch", ".stamp-eval"):
        (tmp_path / ".venv" / name).touch()
    (bin_dir / "mmspubench").write_text('#!/bin/sh\necho "ran mmspubench $*"\n')
    (bin_dir / "mmspubench").chmod(0o755)
    os.utime(tmp_path / "pyproject.toml", (1, 1))  # older than the stamps: nothing to install
    return tmp_path


def _make(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env_without_make_vars(),
    )


def test_make_run_ends_by_saying_how_to_reach_the_environment(installed: Path) -> None:
    result = _make(installed, "run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ran = lines.index("ran mmspubench eval --out runs/default")
    after = "\n".join(lines[ran + 1 :])
    assert "  .venv/bin/mmspubench report runs/default" in after
    assert "  . .venv/bin/activate" in after and "make report" in after


def test_a_dry_run_shows_the_commands_only(installed: Path) -> None:
    assert _make(installed, "-n", "run").stdout.splitlines() == [
        ".venv/bin/mmspubench eval --out runs/default"
    ]


def test_make_report_shows_the_default_runs_table(installed: Path) -> None:
    result = _make(installed, "report")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "ran mmspubench report runs/default"
    assert "make report" in _make(installed, "help").stdout
