"""The bundled tiny models through real ``mmspubench eval`` processes: local, killed and resumed, Slurm (submitit's local executor)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.sweep.state import locked

from tests.sweep.sweep_files import TWO_MODELS, write_sweep

pytestmark = pytest.mark.slow
FIGURES = ("dataset", "model", "config", "accuracy", "cgla", "accuracy_only")
"""What must equal a plain run's results.json (timing, created_at and the backend's report may differ)."""


def _plain(tmp_path: Path, model: dict[str, str], variant: str, limit: int = 2) -> dict[str, Any]:
    out = tmp_path / "plain" / f"{model['name']}--{variant}"
    flags = [
        "--model",
        model["model"],
        "--limit",
        str(limit),
        "--answer-mode",
        "logprob",
        "--batch-size",
        "2",
    ]
    assert main(["eval", *flags, "--prompt-variant", variant, "--no-progress", "--out", str(out)]) == 0
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _figures(folder: Path) -> dict[str, Any]:
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return {k: results.get(k) for k in FIGURES}


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _status(root: Path) -> dict[str, Any]:
    return json.loads((root / "sweep.json").read_text(encoding="utf-8"))["runs"]


def test_two_models_by_two_variants_two_at_once_equal_four_plain_evals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_sweep(tmp_path)
    root = tmp_path / "runs"
    assert main(["sweep", str(path), "--max-parallel", "2"]) == 0
    status = _status(root)
    a, b = (status[n]["attempts"][0] for n in ("biased--standard", "biased--core-focus"))
    assert (
        a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"]
    )  # the two processes overlap
    for model in TWO_MODELS:
        for variant in ("standard", "core-focus"):
            plain = _plain(tmp_path, model, variant)
            assert _figures(root / f"{model['name']}--{variant}") == {k: plain.get(k) for k in FIGURES}
    report = (root / "report.md").read_text(encoding="utf-8")
    table, ranks = report.split("\nRanks by accuracy")  # then the rank intervals of the four runs
    assert table.count("tiny-llava-") == 4 and "core-focus" in table and "Tied groups" in ranks
    doc = json.loads((root / "compare" / "balanced--core-focus-vs-standard.json").read_text(encoding="utf-8"))
    assert doc["n"] == 2 and doc["config_differences"] == {"prompt_variant": ["standard", "core-focus"]}
    # A rerun finds every run finished and leaves the folders byte for byte as they were.
    before = {n: _digests(root / n) for n in status}
    capsys.readouterr()
    assert main(["sweep", str(path), "--max-parallel", "2"]) == 0
    assert "4 finished of 4 runs" in capsys.readouterr().out
    assert {n: _digests(root / n) for n in status} == before
    assert all(len(s["attempts"]) == 1 for s in _status(root).values())


def _sweep_process(path: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "mmspubench.cli", "sweep", str(path)]
    return subprocess.Popen(
        command,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,  # a test run started in the background inherits SIGINT ignored
    )


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default, so Python installs its Ctrl-C handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(condition: Any, seconds: float = 300) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_killed_sweep_resumes_and_ctrl_c_stops_started_work(tmp_path: Path) -> None:
    models = [
        {**TWO_MODELS[0], "options": {"limit": 5, "batch_size": 1}},
        # the whole release (90 items) for the run that is killed and interrupted: on an idle machine
        # five items of the tiny model finish between two polls, and the kill would land too late
        {**TWO_MODELS[1], "options": {"limit": 90, "batch_size": 1}},
    ]
    path = write_sweep(tmp_path, variants=["standard"], models=models)
    root = tmp_path / "runs"
    first, second = root / "biased--standard", root / "balanced--standard"
    proc = _sweep_process(path)
    _wait_for(lambda: (first / "results.json").is_file() and _lines(second / "samples.jsonl") >= 1)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its eval process, mid-run
    proc.wait()
    _wait_for(lambda: _gone(proc.pid), 30)
    finished = _digests(first)
    done_at_kill = _lines(second / "samples.jsonl")
    assert not (second / "results.json").exists() and done_at_kill < 90
    # Ctrl-C (SIGINT to the whole group, as a terminal sends it) during the resumed run stops it cleanly.
    proc = _sweep_process(path)
    _wait_for(lambda: _lines(second / "samples.jsonl") > done_at_kill)  # the resumed eval is at work
    assert not (second / "results.json").exists(), "the resumed run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    _wait_for(lambda: _gone(proc.pid), 60)
    with locked(root):  # the lock went with it
        pass
    assert main(["sweep", str(path)]) == 0
    assert _digests(first) == finished
    resumed = json.loads((second / "results.json").read_text(encoding="utf-8"))
    assert resumed["dataset"]["n"] == 90 and _lines(second / "samples.jsonl") == 90


def test_slurm_through_submitits_local_executor_and_no_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_sweep(
        tmp_path, models=TWO_MODELS[:1], slurm={"local": True, "timeout_min": 20, "gpus_per_node": 0}
    )
    root = tmp_path / "runs"
    assert main(["sweep", str(path), "--launcher", "slurm", "--no-wait"]) == 0
    status = _status(root)
    assert {s["state"] for s in status.values()} == {"submitted"} and all(
        s["job_id"] for s in status.values()
    )
    capsys.readouterr()

    def collected() -> bool:
        assert main(["sweep", str(path), "--launcher", "slurm"]) == 0
        return "2 finished of 2 runs" in capsys.readouterr().out

    _wait_for(collected, 400)
    for variant in ("standard", "core-focus"):
        plain = _plain(tmp_path, TWO_MODELS[0], variant)
        assert _figures(root / f"biased--{variant}") == {k: plain.get(k) for k in FIGURES}
    assert (root / "compare" / "biased--core-focus-vs-standard.md").is_file()
    # Waiting (no --no-wait) with a broken model: its job fails, the error line is eval's.
    (tmp_path / "b").mkdir()
    models = [{"name": "broken", "model": str(tmp_path / "missing")}]
    broken = write_sweep(
        tmp_path / "b", variants=["standard"], metrics=["accuracy"], models=models, slurm={"local": True}
    )
    assert main(["sweep", str(broken), "--launcher", "slurm", "--retries", "0"]) == 2
    error = _status(tmp_path / "b" / "runs")["broken--standard"]["error"]
    assert error.startswith("mmspubench eval: error:") and "missing" in error
