"""The real command line with the bundled model: SIGKILL + resume, and two processes (slow)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.costs import without_times

pytestmark = pytest.mark.slow

EVAL = [sys.executable, "-m", "mmspubench.eval.cli", "eval", "--no-progress", "--batch-size", "2"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def _samples(path: Path) -> list[dict[str, Any]]:
    """The lines without ``scoring``: which items the fast path's check covered depends on how the
    run was split (each process and each resumed part checks its own first item); the tests
    count the checks apart (:func:`_checked`)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in line.items() if k != "scoring"} for line in lines]


def _checked(out: Path) -> int:
    """Samples whose scores the fast path's check compared (one per process or resumed part)."""
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    count = sum(line["scoring"]["check"] is not None for line in lines)
    assert json.loads((out / "results.json").read_text())["model"]["scorer_check"]["items"] == count
    return count


def _figures(out: Path) -> dict[str, Any]:
    res = json.loads((out / "results.json").read_text())
    model = {k: v for k, v in res["model"].items() if k != "scorer_check"}  # see _checked
    return {**{k: res[k] for k in ("accuracy", "cgla", "dataset", "config")}, "model": model}


def _assert_close(got: Any, want: Any, where: str = "") -> None:
    """Equal, floats up to float32 rounding (exact equality for everything else)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key in want:
            _assert_close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6), (where, got, want)
    else:
        assert got == want, (where, got, want)


def test_cli_sigkill_then_resume(tmp_path: Path) -> None:
    n = "12"
    subprocess.run([*EVAL, "--limit", n, "--out", str(tmp_path / "ref")], env=_env(), check=True, timeout=600)
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [*EVAL, "--limit", n, "--out", str(out)],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (samples.exists() and samples.read_bytes().count(b"\n") >= 2):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 2 <= samples.read_bytes().count(b"\n") < int(n)
    subprocess.run([*EVAL, "--limit", n, "--out", str(out)], env=_env(), check=True, timeout=600)
    assert [s["id"] for s in _samples(samples)] == [
        s["id"] for s in _samples(tmp_path / "ref" / "samples.jsonl")
    ]
    # The resumed items share the fast scorer's forward passes with other neighbours than in the
    # uninterrupted run (where the kill lands decides), so CGLs agree to float32 rounding; ids,
    # answers, predictions and every text are equal exactly.
    _assert_close(
        without_times(_samples(samples)), without_times(_samples(tmp_path / "ref" / "samples.jsonl"))
    )
    _assert_close(_figures(out), _figures(tmp_path / "ref"))
    assert (_checked(tmp_path / "ref"), _checked(out)) == (1, 2)  # the killed part's and the resumed one's


def test_cli_two_processes_equal_one(tmp_path: Path) -> None:
    args = ["--limit", "6"]
    subprocess.run([*EVAL, *args, "--out", str(tmp_path / "one")], env=_env(), check=True, timeout=600)
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    subprocess.run(
        [*launcher, "-m", "mmspubench.eval.cli", *EVAL[3:], *args, "--out", str(tmp_path / "two")],
        env=_env(),
        check=True,
        timeout=600,
    )
    # Each process scores its own share of the items, so the items share a forward pass (and its
    # padding) with different neighbours than in one process: scores agree to float32 rounding.
    _assert_close(_figures(tmp_path / "two"), _figures(tmp_path / "one"))
    two, one = (without_times(_samples(tmp_path / run / "samples.jsonl")) for run in ("two", "one"))
    _assert_close(two, one)
    assert (_checked(tmp_path / "one"), _checked(tmp_path / "two")) == (1, 2)  # each process its first
