"""``--launcher slurm`` where Slurm is missing or refuses: stand-in ``sbatch``/``srun`` scripts on PATH."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.sweep.launchers import registry, slurm
from mmspubench.sweep.spec import load_sweep
from mmspubench.sweep.state import STATUS_NAME

from tests.sweep.sweep_files import TWO_MODELS, fake_finished, planned_configs, write_fake_sweep

pytest.importorskip("submitit")
REFUSED = "sbatch: error: Batch job submission failed: internal error"


def _tools(folder: Path, monkeypatch: pytest.MonkeyPatch, **scripts: str) -> None:
    """Only these commands (and the shell's basics) on PATH."""
    folder.mkdir()
    for name, body in scripts.items():
        (folder / name).write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")


def _sweep(tmp_path: Path, **slurm: Any) -> Path:
    return write_fake_sweep(tmp_path, models=TWO_MODELS[:1], slurm={"partition": "gpu", **slurm})


def _status(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "runs" / STATUS_NAME).read_text(encoding="utf-8"))["runs"]


def test_no_slurm_on_path_is_one_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path / "bin", monkeypatch)
    assert main(["sweep", str(_sweep(tmp_path)), "--launcher", "slurm"]) == 2
    err = capsys.readouterr().err
    assert "--launcher slurm: 'sbatch' is not on PATH" in err and "local: true" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "runs" / STATUS_NAME).exists()


@pytest.mark.parametrize(
    ("sbatch", "expected"),
    [
        (f"echo '{REFUSED}' >&2; exit 1", REFUSED),
        ("echo 'Submitted batch job abc'", 'Could not make sense of sbatch output "Submitted batch job abc"'),
    ],
)
def test_a_refused_submission_fails_each_run_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sbatch: str,
    expected: str,
) -> None:
    _tools(tmp_path / "bin", monkeypatch, sbatch=sbatch, srun="exit 0")
    assert main(["sweep", str(_sweep(tmp_path)), "--launcher", "slurm", "--retries", "0"]) == 2
    out, err = capsys.readouterr()
    for k, name in enumerate(("biased--standard", "biased--core-focus"), 1):
        assert f"[{k}/2] {name}: failed: job not submitted: {expected}" in out
        assert _status(tmp_path)[name]["error"] == f"job not submitted: {expected}"
    assert "internal error (" not in err and "Traceback" not in out + err


def test_a_job_collected_later_is_recorded_and_a_bad_job_id_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An earlier --no-wait call submitted both; the first job finished meanwhile (its folder is
    # complete, its process gone), the second's id was edited into something that is no job id.
    _tools(tmp_path / "bin", monkeypatch, sbatch=f"echo '{REFUSED}' >&2; exit 1", srun="exit 0")
    path = _sweep(tmp_path, local=True)
    root = tmp_path / "runs"
    fake_finished(root / "biased--standard", planned_configs(path)["biased--standard"])
    submitted: dict[str, Any] = {"state": "submitted", "attempts": [], "error": None}
    runs = {
        "biased--standard": {**submitted, "job_id": "999999999"},
        "biased--core-focus": {**submitted, "job_id": "12; rm -rf ~"},
    }
    (root / STATUS_NAME).write_text(json.dumps({"runs": runs}), encoding="utf-8")
    launcher = dataclasses.replace(registry.REGISTRY["slurm"], launch=lambda context, todo: None)
    monkeypatch.setitem(registry.REGISTRY, "slurm", launcher)  # nothing is submitted again here
    assert main(["sweep", str(path), "--launcher", "slurm"]) == 2
    status = _status(tmp_path)
    assert status["biased--standard"]["state"] == "finished"  # was left 'submitted' for good
    bad = status["biased--core-focus"]
    assert bad["state"] == "failed" and "job id '12; rm -rf ~' is not a Slurm job id" in bad["error"]
    out = capsys.readouterr().out
    assert "[1/2] biased--standard: finished\n" in out and "[1/2] biased--standard: failed" not in out
    assert "skipped" not in out  # collected now, not finished before
    assert "[2/2] biased--core-focus: failed: sweep.json: job id '12; rm -rf ~'" in out


class _Lost:
    """A job submitit reports lost by raising an exception without a message."""

    job_id = "42"

    def exception(self) -> BaseException:
        return RuntimeError("")


def test_a_job_lost_without_a_message_is_a_failed_run_naming_the_exception(tmp_path: Path) -> None:
    run = load_sweep(_sweep(tmp_path), registry.sections()).runs[0]
    outcome = slurm._outcome(run, _Lost(), "2026-01-01T00:00:00")
    assert (outcome.state, outcome.error, outcome.job_id) == ("failed", "RuntimeError", "42")
