"""``submit --results-repo``: the validated run's files under runs/<model>/<revision-or-time>/."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mmspubench.cli import main

from .test_submit import REVISION, make_run, restamp, set_published_split


@pytest.fixture(autouse=True)
def published_split(monkeypatch: pytest.MonkeyPatch) -> None:
    set_published_split(monkeypatch)


def _argv(results: Path, *extra: str) -> list[str]:
    return ["submit", str(results), "--model-repo", "org/model", "--dataset-revision", REVISION, *extra]


def test_dry_run_writes_the_run_files_under_runs_model_time(tmp_path: Path) -> None:
    results = make_run(tmp_path / "run")
    out = tmp_path / "out"
    assert main(_argv(results, "--results-repo", "org/results", "--dry-run", str(out))) == 0
    created = json.loads(results.read_text())["created_at"]
    stamp = created[:19].replace("-", "").replace(":", "") + "Z"
    folder = out / "runs" / "org" / "model" / stamp
    assert (folder / "results.json").read_bytes() == results.read_bytes()
    assert (folder / "samples.jsonl").read_bytes() == (results.parent / "samples.jsonl").read_bytes()
    assert (out / ".eval_results" / "mm-spubench.yaml").is_file()


def test_model_revision_names_the_folder(tmp_path: Path) -> None:
    results = make_run(tmp_path / "run")
    data = json.loads(results.read_text())
    data["model"]["revision"] = "abc1234"
    results.write_text(json.dumps(data))
    restamp(results)
    out = tmp_path / "out"
    assert main(_argv(results, "--results-repo", "org/results", "--dry-run", str(out))) == 0
    assert (out / "runs" / "org" / "model" / "abc1234" / "samples.jsonl").is_file()


def test_a_refused_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = make_run(tmp_path / "run")
    data = json.loads(results.read_text())
    data["accuracy"]["overall"] = 99.0
    results.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main(_argv(results, "--results-repo", "org/results", "--dry-run", str(out))) == 2
    assert "accuracy.overall" in capsys.readouterr().err and not out.exists()
    assert main(_argv(make_run(tmp_path / "ok"), "--results-repo", "bad repo", "--dry-run", str(out))) == 2
    assert "--results-repo" in capsys.readouterr().err and not out.exists()


class _FakeApi:
    commits: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, token: str | None = None) -> None:
        pass

    def create_commit(self, **kw: Any) -> Any:
        self.commits.append(kw)
        return types.SimpleNamespace(pr_url=f"https://hub/{kw['repo_id']}/discussions/1", commit_url="")


def test_pull_requests_on_the_model_repo_and_the_results_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    _FakeApi.commits = []
    monkeypatch.setattr(huggingface_hub, "HfApi", _FakeApi)
    assert main(_argv(make_run(tmp_path / "run"), "--results-repo", "org/results")) == 0
    model, data = _FakeApi.commits
    assert model["repo_id"] == "org/model" and model["repo_type"] == "model"
    assert data["repo_id"] == "org/results" and data["repo_type"] == "dataset" and data["create_pr"]
    paths = sorted(op.path_in_repo for op in data["operations"])
    assert [p.rsplit("/", 1)[1] for p in paths] == ["results.json", "samples.jsonl"]
    assert all(p.startswith("runs/org/model/") for p in paths)


class _RefusingApi(_FakeApi):
    refuse: ClassVar[str] = ""
    """The repo whose pull request fails."""

    def create_commit(self, **kw: Any) -> Any:
        if kw["repo_id"] == self.refuse:
            raise OSError("connection reset")
        return super().create_commit(**kw)


@pytest.mark.parametrize("repo", ["org/model", "org/results"])
def test_a_hub_error_on_either_pull_request_is_one_line_naming_its_repo(
    repo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import huggingface_hub

    monkeypatch.setattr(_FakeApi, "commits", [])
    monkeypatch.setattr(_RefusingApi, "refuse", repo)
    monkeypatch.setattr(huggingface_hub, "HfApi", _RefusingApi)
    assert main(_argv(make_run(tmp_path / "run"), "--results-repo", "org/results")) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert err.endswith(f"could not open a pull request on {repo!r}: connection reset"), err
