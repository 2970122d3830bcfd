"""The `inspect` command line (slow: a fresh process each): the documented offline mock command
works, and a bad -T option is one line before any weights load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mmspubench.cli import main

pytest.importorskip("inspect_ai")


def _inspect(args: list[str], cwd: Path, published: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MMSPUBENCH_CACHE": str(published / "mmspubench-cache"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "inspect_ai", "eval", "mmspubench/mm_spubench", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_documented_offline_mock_command_runs_and_ingests(published: Path, tmp_path: Path) -> None:
    done = _inspect(
        ["--model", "mmspubench-mock/A", "-T", "limit=4", "--log-dir", "logs"], tmp_path, published
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "empty sample set" not in done.stdout + done.stderr
    (log,) = (tmp_path / "logs").glob("*.eval")
    assert main(["ingest", "inspect", str(log), "--out", str(tmp_path / "run")]) == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "expected"), [("max_tokens=0", "-T max_tokens=0"), ("limit=abc", "-T limit='abc'")]
)
def test_a_bad_task_option_is_one_line_before_the_weights_load(
    published: Path, tmp_path: Path, option: str, expected: str
) -> None:
    done = _inspect(["--model", "mmspubench/bundled", "-T", option, "--log-dir", "logs"], tmp_path, published)
    text = done.stdout + done.stderr
    assert done.returncode != 0
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(expected), text[-2000:]
    assert "Loading weights" not in text and "Traceback" not in text
