"""A minimal install (no ``eval`` extra) names the extra to install instead of an internal error.

The missing packages are simulated in a subprocess: a ``sitecustomize`` on ``PYTHONPATH`` makes
``import transformers`` (``torch``, ``gradio``) fail exactly as on an install without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mmspubench.cli import naming_extras
from mmspubench.errors import MMSpuBenchError

BLOCKER = """
import importlib.abc, importlib.util, os, sys

BLOCKED = set(os.environ["BLOCK_MODULES"].split(","))
_find_spec = importlib.util.find_spec


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _hidden_find_spec(name, package=None):
    return None if name.split(".")[0] in BLOCKED else _find_spec(name, package)


sys.meta_path.insert(0, _Blocker())
importlib.util.find_spec = _hidden_find_spec
"""


def _run_without(blocked: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "BLOCK_MODULES": blocked, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", "mmspubench.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.process
@pytest.mark.parametrize("blocked", ["transformers", "torch", "torch,transformers,gradio"])
def test_eval_without_the_eval_extra_names_it(blocked: str, tmp_path: Path) -> None:
    proc = _run_without(blocked, ["eval", "--limit", "1", "--out", "run", "--no-progress"], tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "pip install 'mm-spubench[eval]'" in lines[0], lines
    assert "internal error" not in proc.stderr and not (tmp_path / "run").exists()


@pytest.mark.process
@pytest.mark.parametrize("blocked", ["gradio", "transformers"])
def test_space_without_the_space_extra_names_it(blocked: str, tmp_path: Path) -> None:
    proc = _run_without(blocked, ["space", "--port", "1"], tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "pip install 'mm-spubench[space]'" in lines[0], lines


def test_a_missing_optional_package_anywhere_is_named_with_its_extra() -> None:
    def needs_gradio(args: object) -> int:
        raise ModuleNotFoundError("No module named 'gradio'", name="gradio")

    with pytest.raises(MMSpuBenchError, match=r"pip install 'mm-spubench\[space\]'"):
        naming_extras(needs_gradio)(None)


def test_a_missing_module_that_is_no_optional_package_stays_a_bug() -> None:
    def broken(args: object) -> int:
        raise ModuleNotFoundError("No module named 'mmspubench.nothing'", name="mmspubench.nothing")

    with pytest.raises(ModuleNotFoundError):
        naming_extras(broken)(None)
