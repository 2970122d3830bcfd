"""Real processes: SIGKILL midway then resume; two processes under torchrun equal one."""

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

from tests.eval.fakes import run_fake

REPO = Path(__file__).resolve().parents[2]
FAKES = REPO / "tests" / "eval" / "fakes.py"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def _samples(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _comparable(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results.items() if k not in ("timing", "created_at")}


@pytest.mark.process
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    n = 12
    reference = run_fake(tmp_path / "ref", n)
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(FAKES), str(out), str(n), "0.15"], env=_env(), cwd=REPO)
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if samples.exists() and samples.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = samples.read_bytes().count(b"\n")
    assert 3 <= done < n, "the run should be killed midway"
    assert not (out / "results.json").exists()
    # What a kill in the middle of a write leaves behind: a line without its newline.
    with samples.open("ab") as handle:
        handle.write(b'{"id": "0000')
    resumed = run_fake(out, n)
    assert resumed is not None and reference is not None
    ids = [s["id"] for s in _samples(samples)]
    assert ids == [f"{i:06d}" for i in range(n)]  # each id exactly once, in dataset order
    assert _samples(samples) == _samples(tmp_path / "ref" / "samples.jsonl")
    assert _comparable(resumed) == _comparable(reference)
    assert resumed["timing"]["items_scored"] == n - done


@pytest.mark.process
def test_two_processes_equal_one(tmp_path: Path) -> None:
    # results.json names torch's CUDA build when the run has torch loaded; torchrun's processes do,
    # so the single run here must too, whichever tests this worker ran before
    pytest.importorskip("torch")
    n = 11
    single = run_fake(tmp_path / "one", n)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(FAKES),
        str(tmp_path / "two"),
        str(n),
    ]
    subprocess.run(cmd, env=_env(), cwd=REPO, check=True, timeout=300)
    merged = json.loads((tmp_path / "two" / "results.json").read_text())
    assert single is not None
    assert _comparable(merged) == _comparable(single)
    assert merged["timing"]["processes"] == 2 and merged["timing"]["items_scored"] == n
    assert (tmp_path / "two" / "samples.jsonl").read_bytes() == (
        tmp_path / "one" / "samples.jsonl"
    ).read_bytes()
    assert not list((tmp_path / "two").glob("*.rank*"))
