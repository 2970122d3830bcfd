"""The sweep's plan, states, lock, retries and the local launcher's slots (eval replaced by a fast fake)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.sweep.state import LOCK_NAME, STATUS_NAME, locked

from tests.sweep.sweep_files import fake_finished, planned_configs
from tests.sweep.sweep_files import write_fake_sweep as write_sweep


def _records(root: Path) -> list[dict[str, Any]]:
    lines = (root / "fake-eval.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_the_dry_run_shows_each_runs_state_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_sweep(tmp_path)
    root = tmp_path / "runs"
    configs = planned_configs(path)
    fake_finished(root / "biased--standard", configs["biased--standard"])
    fake_finished(root / "balanced--core-focus", {**configs["balanced--core-focus"], "seed": 9})
    (root / "biased--core-focus").mkdir()
    (root / "biased--core-focus" / "run.json").write_text("{}", encoding="utf-8")
    status = {"runs": {"balanced--standard": {"state": "failed", "error": "x", "attempts": []}}}
    (root / STATUS_NAME).write_text(json.dumps(status), encoding="utf-8")
    before = sorted(p.name for p in root.rglob("*"))
    assert main(["sweep", str(path), "--dry-run"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"| {root}")]
    states = {row.split(" | ")[0][2:].rsplit("/", 1)[1]: row.split(" | ")[-1].strip(" |") for row in rows}
    assert (
        states
        == {
            "biased--standard": "finished",
            "biased--core-focus": "partial",
            "balanced--standard": "failed",
            "balanced--core-focus": "other",  # a finished run of other options: never skipped as done, never touched
        }
    )
    assert "--answer-mode logprob --batch-size 2 --no-progress --prompt-variant core-focus" in rows[1]
    assert sorted(p.name for p in root.rglob("*")) == before


def test_a_second_sweep_on_the_same_root_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None
) -> None:
    path = write_sweep(tmp_path)
    with locked(tmp_path / "runs"):
        assert main(["sweep", str(path)]) == 2
    err = capsys.readouterr().err
    assert "another sweep is running on this root" in err
    assert not (tmp_path / "runs" / STATUS_NAME).exists()
    assert (tmp_path / "runs" / LOCK_NAME).exists()


def test_one_run_per_gpu_never_two_on_one_gpu(tmp_path: Path, fake_eval: None) -> None:
    path = write_sweep(tmp_path)
    assert main(["sweep", str(path), "--gpus", "0,1"]) == 0
    records = _records(tmp_path / "runs")
    assert len(records) == 4 and {r["gpu"] for r in records} == {"0", "1"}
    for gpu in ("0", "1"):
        spans = sorted((float(r["start"]), float(r["end"])) for r in records if r["gpu"] == gpu)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    first = [r for r in records if r["run"] in ("biased--standard", "biased--core-focus")]
    assert float(first[0]["start"]) < float(first[1]["end"]) and float(first[1]["start"]) < float(
        first[0]["end"]
    )


def test_max_parallel_caps_the_runs_at_once(tmp_path: Path, fake_eval: None) -> None:
    path = write_sweep(tmp_path)
    assert main(["sweep", str(path), "--max-parallel", "3"]) == 0
    records = _records(tmp_path / "runs")
    points = sorted([(float(r["start"]), 1) for r in records] + [(float(r["end"]), -1) for r in records])
    at_once = max(sum(step for _, step in points[: i + 1]) for i in range(len(points)))
    assert at_once == 3


def test_a_failing_model_fails_its_own_runs_only_and_is_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EVAL_FAIL", "balanced")
    monkeypatch.setenv("FAKE_EVAL_FAIL_CODE", "1")  # a crash (exit 1), which another attempt may not meet
    path = write_sweep(tmp_path)
    assert main(["sweep", str(path), "--retries", "2", "--max-parallel", "2"]) == 2
    status = json.loads((tmp_path / "runs" / STATUS_NAME).read_text(encoding="utf-8"))["runs"]
    for name in ("balanced--standard", "balanced--core-focus"):
        assert status[name]["state"] == "failed" and len(status[name]["attempts"]) == 3
        assert status[name]["error"] == f"mmspubench eval: error: {name}: cannot load the model (fake)"
    assert [status[n]["state"] for n in ("biased--standard", "biased--core-focus")] == ["finished"] * 2
    assert len(status["biased--standard"]["attempts"]) == 1
    out = capsys.readouterr().out
    assert "2 finished, 2 failed of 4 runs" in out
    assert f"balanced--standard: failed: {status['balanced--standard']['error']}" in out
    # A rerun skips the finished runs and tries the failed ones again.
    monkeypatch.delenv("FAKE_EVAL_FAIL")
    assert main(["sweep", str(path)]) == 0
    runs = [r["run"] for r in _records(tmp_path / "runs")]
    assert runs.count("biased--standard") == 1 and runs.count("balanced--standard") == 4


def test_gpus_must_be_distinct_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(write_sweep(tmp_path)), "--gpus", "0,0"]) == 2
    assert "--gpus '0,0'" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["configs.json", "sweep.yaml"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--launcher", "slurm", "--gpus", "0"], "--gpus and --max-parallel are options of --launcher local"),
        (["--launcher", "hf-jobs", "--max-parallel", "2"], "not hf-jobs"),
        (["--no-wait"], "--no-wait is an option of --launcher slurm and hf-jobs"),
        (["--launcher", "slurm"], "--launcher slurm needs a 'slurm' section"),
    ],
)
def test_an_option_of_another_launcher_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    assert main(["sweep", str(write_sweep(tmp_path)), *flags]) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
