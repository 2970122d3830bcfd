"""The sweep at work (local launcher, eval replaced by the fast fake): which runs count as finished,
what is retried, what the terminal, sweep.json and the logs show, and what is refused before it starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.redact import forget_secrets
from mmspubench.sweep.launchers import local
from mmspubench.sweep.state import LOCK_NAME, STATUS_NAME

from tests.sweep.sweep_files import TWO_MODELS, fake_finished, planned_configs, write_fake_sweep, write_sweep

FULL = {"answer_mode": "logprob", "batch_size": 2, "progress": False}
"""The options of a plan of the whole split (no ``limit``)."""


def _status(root: Path) -> dict[str, Any]:
    return json.loads((root / STATUS_NAME).read_text(encoding="utf-8"))["runs"]


def _ran(root: Path) -> list[str]:
    path = root / "fake-eval.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [json.loads(line)["run"] for line in lines]


def test_a_limit_run_or_another_datasets_run_in_a_planned_folder_is_not_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None
) -> None:
    path = write_fake_sweep(tmp_path, options=FULL, variants=["standard"])
    root, configs = tmp_path / "runs", planned_configs(path)
    # A `--limit 2` run of the same model and options, and a run of another dataset (the plan: bundled).
    fake_finished(root / "biased--standard", {**configs["biased--standard"], "limit": 2})
    fake_finished(root / "balanced--standard", {**configs["balanced--standard"], "dataset": "/other/ds"})
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert main(["sweep", str(path), "--dry-run"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"| {root}")]
    assert [row.rstrip(" |").rsplit("| ", 1)[1] for row in rows] == ["other", "other"]
    assert main(["sweep", str(path)]) == 2
    out = capsys.readouterr().out
    assert "field 'config.limit': 2 is not the planned None" in out
    assert "field 'config.dataset': '/other/ds' is not the planned None" in out
    assert "0 finished" not in out and "2 other of 2 runs" in out
    assert _ran(root) == [] and {p: p.read_bytes() for p in before} == before  # never touched


def test_a_root_inside_a_model_or_dataset_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None
) -> None:
    model, data = tmp_path / "model", tmp_path / "data"
    model.mkdir()
    data.mkdir()
    models = [{"name": "m", "model": str(model)}]
    for root, folder, why in (
        (str(model / "runs"), model, "lies inside the input folder"),
        (str(data), data, "is the input"),
    ):
        # The sweep refuses such a root when it reads the file, so no planned configs are written.
        path = write_sweep(tmp_path, root=root, models=models, dataset=str(data), options=FULL)
        assert main(["sweep", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"sweep.yaml: root {root}: {why} {folder}; an output never" in err
        assert "error:" in err and "Traceback" not in err
        assert sorted(p.name for p in folder.iterdir()) == []  # no lock, no sweep.json, no logs


def test_bad_input_is_not_retried_a_crash_or_a_kill_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EVAL_FAIL", "balanced--standard")  # exit 2: eval refused its input
    path = write_fake_sweep(tmp_path)
    assert main(["sweep", str(path), "--retries", "2"]) == 2
    status = _status(tmp_path / "runs")
    assert len(status["balanced--standard"]["attempts"]) == 1
    assert status["balanced--standard"]["attempts"][0]["permanent"] is True
    out = capsys.readouterr().out
    assert "[3/4] balanced--standard: failed: mmspubench eval: error:" in out
    assert "(not retried: another attempt cannot change it)" in out
    # A run killed by a signal (kill -9, the out-of-memory killer) is retried, and says how it ended.
    monkeypatch.setenv("FAKE_EVAL_FAIL_CODE", "-9")
    assert main(["sweep", str(path), "--retries", "1"]) == 2
    attempts = _status(tmp_path / "runs")["balanced--standard"]["attempts"]
    assert len(attempts) == 3 and not attempts[-1]["permanent"]
    assert attempts[-1]["error"].startswith("eval was killed by SIGKILL; last log line: mmspubench eval:")
    monkeypatch.delenv("FAKE_EVAL_FAIL")  # the model fixed: the next call runs it again
    assert main(["sweep", str(path)]) == 0
    assert _ran(tmp_path / "runs").count("balanced--standard") == 4


def test_progress_lines_and_the_skipped_runs_of_a_resumed_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None
) -> None:
    path = write_fake_sweep(tmp_path)
    assert main(["sweep", str(path), "--gpus", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        "[1/4] biased--standard: running on GPU 0",
        "[1/4] biased--standard: finished",
        "[2/4] biased--core-focus: running on GPU 0",
        "[2/4] biased--core-focus: finished",
    ]
    assert main(["sweep", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        f"[{k}/4] {name}: finished already, skipped"
        for k, name in enumerate(
            ["biased--standard", "biased--core-focus", "balanced--standard", "balanced--core-focus"], 1
        )
    ]
    assert out[4].startswith("4 finished of 4 runs")


def test_a_run_that_finished_as_ctrl_c_arrived_is_recorded_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(item: Any, gpu: str | None) -> Any:
        raise KeyboardInterrupt  # Ctrl-C between the run's end and the sweep reading it

    monkeypatch.setattr(local, "_ended", interrupted)
    path = write_fake_sweep(tmp_path, models=TWO_MODELS[:1], variants=["standard"])
    assert main(["sweep", str(path)]) == 130
    assert _status(tmp_path / "runs")["biased--standard"]["state"] == "finished"
    assert not (tmp_path / "runs" / LOCK_NAME).read_bytes()  # the lock file is empty, and free again
    monkeypatch.undo()
    assert "interrupted" in capsys.readouterr().err


SECRETS = ("sk-proj-0123456789abcdefghijklmnop", "hf_LeakedTokenValue0123456789abcdef")


def test_a_key_a_run_prints_reaches_no_line_no_log_and_not_sweep_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EVAL_LEAK", f"server echoed: Bearer {SECRETS[0]} and {SECRETS[1]}")
    monkeypatch.setenv("FAKE_EVAL_FAIL", "balanced")
    path = write_fake_sweep(tmp_path)
    assert main(["sweep", str(path), "--retries", "0"]) == 2
    root = tmp_path / "runs"
    error = _status(root)["balanced--standard"]["error"]
    assert error == "server echoed: Bearer *** and ***"
    log = (root / "logs" / "biased--standard.log").read_text(encoding="utf-8")
    assert "Bearer ***" in log  # the line is kept, the key masked
    out = capsys.readouterr()
    written = "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())
    for secret in SECRETS:
        assert secret not in out.out + out.err and secret not in written


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"runs": {"biased--standard": {"attempts": 5}}}', "run 'biased--standard': field 'attempts'"),
        ('{"runs": {"biased--standard": {"state": "done"}}}', "field 'state': 'done' is not one of new,"),
        ('{"runs": {"biased--standard": {"error": ["x"]}}}', "field 'error': expected a string or null"),
        ('{"runs": {"biased--standard": 3}}', "run 'biased--standard': expected an object, got 3"),
        ('{"runs": [', "sweep.json"),
    ],
)
def test_an_edited_or_corrupted_sweep_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None, text: str, expected: str
) -> None:
    path = write_fake_sweep(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / STATUS_NAME).write_text(text, encoding="utf-8")
    assert main(["sweep", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1 and "internal error" not in err
    assert _ran(tmp_path / "runs") == []


def test_run_folder_names_are_readable_unique_and_safe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "eval" / "assets" / "x").mkdir(parents=True)
    models = [
        {"model": "org/name"},
        {"model": "./eval/assets/x"},  # a folder beside SWEEP.yaml: its name
        {"model": "./missing/folder/y"},  # a folder that is not there (yet): its name too, not a Hub id
        {"model": "../../etc"},
        {"model": "org/" + "n" * 300},
    ]
    path = write_fake_sweep(tmp_path, models=models, variants=["standard"])
    assert main(["sweep", str(path), "--dry-run"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"| {tmp_path}")]
    names = [Path(row.split(" | ")[0][2:]).name for row in rows]
    assert names[:4] == ["org__name--standard", "x--standard", "y--standard", "etc--standard"]
    assert len(names[4]) <= 120 and names[4].startswith("org__nnnn") and len(set(names)) == 5
    assert all(Path(row.split(" | ")[0][2:]).parent == tmp_path / "runs" for row in rows)


def test_the_plain_key_a_run_reads_is_masked_in_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_eval: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not shaped like a credential: masked because the plan names its variable (api_key_env).
    key = "plainvalue-0042-xyz"
    monkeypatch.setenv("MY_KEY", key)
    monkeypatch.setenv("FAKE_EVAL_LEAK", f"server echoed the key {key}")
    options = {"limit": 1, "backend": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "MY_KEY"}
    path = write_fake_sweep(
        tmp_path, models=[{"name": "m", "model": "served"}], variants=["standard"], options=options
    )
    try:
        assert main(["sweep", str(path)]) == 0
        log = (tmp_path / "runs" / "logs" / "m--standard.log").read_text(encoding="utf-8")
        assert log == "server echoed the key ***\n"
        assert key not in "".join(capsys.readouterr())
    finally:
        forget_secrets()
