"""``--launcher hf-jobs`` through a stand-in for the Hub's Jobs API (local processes, no network)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import package_version
from mmspubench.redact import forget_secrets
from mmspubench.sweep.launchers import hf_jobs
from mmspubench.sweep.wheel import checkout

from tests.sweep.hub_standin import StandInJobs
from tests.sweep.sweep_files import TWO_MODELS, write_sweep

TOKEN = "hf_standinSecretValue0123456789abcdef"
HF = {"results_repo": "org/sweep-results", "flavor": "cpu-basic", "timeout": "10m"}


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInJobs]:
    api = StandInJobs(tmp_path / "standin")
    monkeypatch.setattr(hf_jobs, "make_api", api.client)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    yield api
    forget_secrets()


def _sweep(tmp_path: Path, **hf: object) -> Path:
    return write_sweep(
        tmp_path, variants=["standard"], metrics=["accuracy"], models=TWO_MODELS[:1], hf_jobs={**HF, **hf}
    )


def _everything_written(tmp_path: Path) -> str:
    return "".join(
        p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".whl"
    )


def test_the_dry_run_is_offline_and_says_the_flavor_was_not_checked(
    tmp_path: Path, standin: StandInJobs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(_sweep(tmp_path, flavor="h100-x8")), "--launcher", "hf-jobs", "--dry-run"]) == 0
    assert "flavor 'h100-x8' was not checked" in capsys.readouterr().out
    assert standin.calls == []


def test_an_unknown_flavor_is_refused_before_anything_is_sent(
    tmp_path: Path, standin: StandInJobs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(_sweep(tmp_path, flavor="h100-x8")), "--launcher", "hf-jobs"]) == 2
    err = capsys.readouterr().err
    assert "flavor 'h100-x8' is not offered; expected one of cpu-basic, cpu-upgrade" in err
    assert [name for name, _ in standin.calls] == ["list_jobs_hardware"]


def test_no_token_is_refused_before_anything_is_sent(
    tmp_path: Path, standin: StandInJobs, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    assert main(["sweep", str(_sweep(tmp_path)), "--launcher", "hf-jobs"]) == 2
    assert "$HF_TOKEN is not set" in capsys.readouterr().err
    assert standin.calls == []


@pytest.mark.slow
def test_a_run_goes_to_a_job_and_comes_back_verified(
    tmp_path: Path, standin: StandInJobs, capsys: pytest.CaptureFixture[str]
) -> None:
    standin.leak_secret = True  # the job prints its token: no log or line here may show it
    before = {p.name for p in checkout().iterdir()}
    assert main(["sweep", str(_sweep(tmp_path)), "--launcher", "hf-jobs"]) == 0
    # The job's wheel is built as `space build` builds it: nothing new in the checkout (pip wheel
    # left build/ there, which then broke the fast tests that read the source tree).
    assert {p.name for p in checkout().iterdir()} - before == set()
    run = tmp_path / "runs" / "biased--standard"
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert results["dataset"]["n"] == 2 and results["config"]["model"] == TWO_MODELS[0]["model"]
    names = [name for name, _ in standin.calls]
    assert names == [
        "list_jobs_hardware",
        "run_uv_job",
        "wait_for_job",
        "fetch_job_logs",
        "snapshot_download",
    ]
    sent = standin.calls[1][1]
    wheel = Path(sent["script_args"][0])
    assert (
        sent["script"] == str(hf_jobs.SCRIPT)
        and wheel.name == f"mm_spubench-{package_version()}-py3-none-any.whl"
    )
    assert sent["script_args"][1:6] == [
        "eval",
        "org/sweep-results",
        "sweeps/runs/biased--standard",
        "HF_TOKEN",
        "--",
    ]
    assert sent["script_args"][6:] == [
        "--model",
        TWO_MODELS[0]["model"],
        "--metrics",
        "accuracy",
        "--limit",
        "2",
        "--answer-mode",
        "logprob",
        "--batch-size",
        "2",
        "--no-progress",
    ]
    assert (sent["flavor"], sent["timeout"], sent["secrets"]) == ("cpu-basic", 600, {"HF_TOKEN": TOKEN})
    assert standin.tokens == [(name, TOKEN) for name in names]  # every Hub call with the token
    without_secrets = json.dumps({k: v for k, v in sent.items() if k != "secrets"})
    assert TOKEN not in without_secrets
    uv = (standin.hub / "uv.log").read_text(encoding="utf-8")
    assert f"mm-spubench[eval] @ file://{standin.root}/jobs/job001/data/{wheel.name}" in uv
    log = (tmp_path / "runs" / "logs" / "biased--standard.log").read_text(encoding="utf-8")
    assert "job env: HF_TOKEN=***" in log
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err and TOKEN not in _everything_written(tmp_path / "runs")


@pytest.mark.slow
def test_a_failing_job_a_timed_out_job_and_a_result_that_does_not_verify(
    tmp_path: Path, standin: StandInJobs, capsys: pytest.CaptureFixture[str]
) -> None:
    def tamper(job_id: str, hub: Path) -> None:
        if job_id == "job001":  # the first attempt's figures are edited after the job: refused, retried
            path = next(hub.rglob("results.json"))
            doc = json.loads(path.read_text(encoding="utf-8"))
            doc["accuracy"]["overall"] = 99.0
            path.write_text(json.dumps(doc), encoding="utf-8")

    standin.tamper = tamper
    models = [TWO_MODELS[0], {"name": "broken", "model": str(tmp_path / "no-such-model")}]
    path = write_sweep(tmp_path, variants=["standard"], metrics=["accuracy"], models=models, hf_jobs=HF)
    assert main(["sweep", str(path), "--launcher", "hf-jobs", "--retries", "1"]) == 2
    status = json.loads((tmp_path / "runs" / "sweep.json").read_text(encoding="utf-8"))["runs"]
    good, broken = status["biased--standard"], status["broken--standard"]
    assert good["state"] == "finished" and [a["state"] for a in good["attempts"]] == ["failed", "finished"]
    assert "the fetched run does not verify" in good["attempts"][0]["error"]
    assert "field 'accuracy.overall': submitted value 99.0 disagrees" in good["attempts"][0]["error"]
    assert broken["state"] == "failed" and len(broken["attempts"]) == 1  # eval refused it: not retried
    assert (
        broken["error"].startswith("job job00")
        and "ended ERROR (exit code 2); last log line: mmspubench eval: error:" in broken["error"]
    )
    assert not (tmp_path / "runs" / "broken--standard").exists()
    # A job over its time limit is stopped by the Hub: a failed run, the reason in one line.
    (tmp_path / "slow").mkdir()
    slow = _sweep(tmp_path / "slow", timeout="1s")
    assert main(["sweep", str(slow), "--launcher", "hf-jobs", "--retries", "0"]) == 2
    timed_out = json.loads((tmp_path / "slow" / "runs" / "sweep.json").read_text(encoding="utf-8"))["runs"]
    assert "ended ERROR (Job timeout)" in timed_out["biased--standard"]["error"]
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err and TOKEN not in _everything_written(tmp_path)


class _NoJobs(StandInJobs):
    """The Hub refuses the first job; the others are created but never end (until cancelled)."""

    def run_uv_job(self, script: str, *, script_args: list[str] | None = None, **kwargs: object) -> object:
        self.calls.append(("run_uv_job", {"script": script}))
        if sum(name == "run_uv_job" for name, _ in self.calls) == 1:
            raise RuntimeError("403 Forbidden: no Jobs for this namespace")
        return SimpleNamespace(
            id=f"job{len(self.calls)}", status=SimpleNamespace(stage="RUNNING", message=None)
        )

    def wait_for_job(self, job_id: str, **kwargs: object) -> object:
        raise KeyboardInterrupt  # the user presses Ctrl-C while the sweep waits

    def cancel_job(self, *, job_id: str, **kwargs: object) -> None:
        self.calls.append(("cancel_job", {"job_id": job_id}))


def test_a_refused_job_fails_its_run_and_ctrl_c_cancels_the_jobs_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = _NoJobs(tmp_path / "standin")
    monkeypatch.setattr(hf_jobs, "make_api", lambda token: api)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    (tmp_path / "fake.whl").write_bytes(b"")
    monkeypatch.setattr(hf_jobs.wheel, "build", lambda out: tmp_path / "fake.whl")
    path = write_sweep(tmp_path, variants=["standard"], metrics=["accuracy"], models=TWO_MODELS, hf_jobs=HF)
    assert main(["sweep", str(path), "--launcher", "hf-jobs"]) == 130
    assert "mmspubench sweep: interrupted" in capsys.readouterr().err
    status = json.loads((tmp_path / "runs" / "sweep.json").read_text(encoding="utf-8"))["runs"]
    assert status["biased--standard"]["error"] == "job not created: 403 Forbidden: no Jobs for this namespace"
    assert api.calls[-1] == ("cancel_job", {"job_id": "job3"})
    forget_secrets()


class _Scripted(StandInJobs):
    """Jobs that never start a process: each ends as ``final`` says, with ``log`` as its log."""

    final: Any = None
    log: tuple[str, ...] = ()

    def run_uv_job(self, script: str, *, script_args: list[str] | None = None, **kwargs: Any) -> Any:
        self.calls.append(("run_uv_job", {"script": script}))
        return SimpleNamespace(id=f"job{len(self.calls)}", status=SimpleNamespace(stage="RUNNING"))

    def wait_for_job(self, job_id: str, **kwargs: Any) -> Any:
        if isinstance(self.final, BaseException):
            raise self.final  # the client choked on the Hub's answer (huggingface_hub's JobInfo)
        return SimpleNamespace(id=job_id, status=self.final)

    def fetch_job_logs(self, *, job_id: str, **kwargs: Any) -> Iterator[str]:
        return iter(self.log)


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Scripted]:
    api = _Scripted(tmp_path / "standin")
    monkeypatch.setattr(hf_jobs, "make_api", lambda token: api)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    (tmp_path / "fake.whl").write_bytes(b"")
    monkeypatch.setattr(hf_jobs.wheel, "build", lambda out: tmp_path / "fake.whl")
    yield api
    forget_secrets()


def _failed(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    assert main(["sweep", str(_sweep(tmp_path)), "--launcher", "hf-jobs", *flags]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err
    assert TOKEN not in out + err and TOKEN not in _everything_written(tmp_path / "runs")
    run: dict[str, Any] = json.loads((tmp_path / "runs" / "sweep.json").read_text(encoding="utf-8"))["runs"][
        "biased--standard"
    ]
    assert run["state"] == "failed" and f"biased--standard: failed: {run['error']}" in out
    return run


@pytest.mark.parametrize(
    ("final", "expected"),
    [
        (KeyError("stage"), "job job2: cannot read its status (KeyError: 'stage')"),
        (SimpleNamespace(message="?"), "job job2 ended UNKNOWN (?)"),
        ({"message": None}, "job job2 ended UNKNOWN; last log line: (no log)"),
    ],
)
def test_a_malformed_job_status_fails_its_run_in_one_line(
    tmp_path: Path, scripted: _Scripted, capsys: pytest.CaptureFixture[str], final: Any, expected: str
) -> None:
    scripted.final = final
    assert _failed(tmp_path, capsys, "--retries", "0")["error"].startswith(expected)


def test_a_failed_jobs_log_with_the_token_is_masked_and_bad_input_is_not_retried(
    tmp_path: Path, scripted: _Scripted, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.final = SimpleNamespace(stage="ERROR", message="exit code 2")
    scripted.log = (f"job env: HF_TOKEN={TOKEN}", f"mmspubench eval: error: no such model (token {TOKEN})")
    run = _failed(tmp_path, capsys, "--retries", "2")
    assert (
        run["error"]
        == "job job2 ended ERROR (exit code 2); last log line: mmspubench eval: error: no such model (token ***)"
    )
    assert len(run["attempts"]) == 1 and run["attempts"][0]["permanent"]  # eval refused its input
    log = (tmp_path / "runs" / "logs" / "biased--standard.log").read_text(encoding="utf-8")
    assert "job env: HF_TOKEN=***" in log


class _Traversal(_Scripted):
    """A results repo holding a file named with ``..``: the client refuses it as huggingface_hub does."""

    def snapshot_download(self, repo_id: str, **kwargs: Any) -> str:
        name = "sweeps/runs/biased--standard/../../../../outside.txt"
        raise ValueError(f"Invalid filename '{name}': cannot contain a '..' path segment.")


def test_a_fetched_file_named_with_dotdot_fails_the_run_and_writes_nothing_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = _Traversal(tmp_path / "standin")
    api.final = SimpleNamespace(stage="COMPLETED", message=None)
    monkeypatch.setattr(hf_jobs, "make_api", lambda token: api)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    (tmp_path / "fake.whl").write_bytes(b"")
    monkeypatch.setattr(hf_jobs.wheel, "build", lambda out: tmp_path / "fake.whl")
    run = _failed(tmp_path, capsys, "--retries", "0")
    assert (
        "the fetched run does not verify: cannot download sweeps/runs/biased--standard: Invalid filename"
        in run["error"]
    )
    assert not (tmp_path / "runs" / "biased--standard").exists()
    forget_secrets()


def test_a_fetched_folder_with_a_link_is_refused(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    (staging / "run").mkdir(parents=True)
    (staging / "run" / "results.json").symlink_to("/etc/hostname")
    with pytest.raises(MMSpuBenchError, match=r"run/results.json: a link or a path outside the run folder"):
        hf_jobs._check_tree(staging, staging / "run")


def test_an_edited_job_id_in_sweep_json_fails_its_run_in_one_line(
    tmp_path: Path, scripted: _Scripted, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    entry: dict[str, Any] = {
        "state": "submitted",
        "attempts": [],
        "error": None,
        "job_id": "../../no-such-job",
    }
    (root / "sweep.json").write_text(json.dumps({"runs": {"biased--standard": entry}}), encoding="utf-8")
    scripted.final = SimpleNamespace(stage="ERROR", message="exit code 1")
    run = _failed(tmp_path, capsys, "--retries", "0")
    first = run["attempts"][0]["error"]  # the stand-in does not know the job: KeyError, as a 404 would be
    assert first == "job ../../no-such-job: cannot read its status (KeyError: '../../no-such-job')"
    assert run["error"].startswith("job job3 ended ERROR (exit code 1)")  # then started again
