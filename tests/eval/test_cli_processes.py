"""The real command line with the bundled model: SIGKILL + resume, and two processes (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

EVAL = [sys.executable, "-m", "mmspubench.eval.cli", "eval", "--no-progress", "--batch-size", "2"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def _samples(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _figures(out: Path) -> dict[str, Any]:
    res = json.loads((out / "results.json").read_text())
    return {k: res[k] for k in ("accuracy", "cgla", "dataset", "model", "config")}


def test_cli_sigkill_then_resume(tmp_path: Path) -> None:
    n = "12"
    subprocess.run([*EVAL, "--limit", n, "--out", str(tmp_path / "ref")], env=_env(), check=True, timeout=600)
    out = tmp_path / "killed"
    proc = subprocess.Popen([*EVAL, "--limit", n, "--out", str(out)], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (samples.exists() and samples.read_bytes().count(b"\n") >= 2):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 2 <= samples.read_bytes().count(b"\n") < int(n)
    subprocess.run([*EVAL, "--limit", n, "--out", str(out)], env=_env(), check=True, timeout=600)
    assert [s["id"] for s in _samples(samples)] == [s["id"] for s in _samples(tmp_path / "ref" / "samples.jsonl")]
    assert _samples(samples) == _samples(tmp_path / "ref" / "samples.jsonl")
    assert _figures(out) == _figures(tmp_path / "ref")


def test_cli_two_processes_equal_one(tmp_path: Path) -> None:
    args = ["--limit", "6"]
    subprocess.run([*EVAL, *args, "--out", str(tmp_path / "one")], env=_env(), check=True, timeout=600)
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    subprocess.run([*launcher, "-m", "mmspubench.eval.cli", *EVAL[3:], *args, "--out", str(tmp_path / "two")],
                   env=_env(), check=True, timeout=600)
    assert _figures(tmp_path / "two") == _figures(tmp_path / "one")
    assert _samples(tmp_path / "two" / "samples.jsonl") == _samples(tmp_path / "one" / "samples.jsonl")
