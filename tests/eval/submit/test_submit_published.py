"""eval and submit against the benchmark as it is published (raw release on the Hub, card without split ids)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries
from mmspubench.cli import main
from mmspubench.eval.submit.submission import YAML_PATH

from tests.dataset_builder import hub_fixtures as hub


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "mmspubench-cache"))
    for name in ("MMSPUBENCH_PUBLISHED_SPLIT", "MMSPUBENCH_PUBLISHED_REVISION"):
        monkeypatch.delenv(name, raising=False)
    return hub.published(tmp_path)


def _eval(out: Path, *extra: str) -> dict[str, object]:
    argv = ["eval", "--dataset", hub.REPO_ID, "--out", str(out), "--no-progress", *extra]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


def _submit(results: Path, out: Path) -> int:
    argv = ["submit", str(results), "--model-repo", "org/model", "--dry-run", str(out)]
    return main([*argv, "--dataset-revision", hub.COMMIT])


def test_eval_offline_records_the_commit_and_a_full_run_submits(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _eval(tmp_path / "run")
    dataset = results["dataset"]
    assert isinstance(dataset, dict)
    assert (dataset["kind"], dataset["id"], dataset["revision"]) == ("hub", hub.REPO_ID, hub.COMMIT)
    assert dataset["n"] == hub.N_IMAGES and len(dataset["content_hash"]) == 64
    assert _submit(tmp_path / "run" / "results.json", tmp_path / "pr") == 0
    entries = parse_eval_result_entries(yaml.safe_load((tmp_path / "pr" / YAML_PATH).read_text()))
    # Only the task eval.yaml declares, on its scale (a fraction, as inspect-ai's accuracy).
    assert [e.task_id for e in entries] == ["mcq_accuracy"]
    accuracy = results["accuracy"]
    assert isinstance(accuracy, dict)
    assert entries[0].value == pytest.approx(accuracy["overall"] / 100, abs=1e-6)
    assert entries[0].dataset_revision == hub.COMMIT


def test_a_partial_run_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _eval(tmp_path / "run", "--limit", "4", "--metrics", "accuracy")
    capsys.readouterr()
    assert _submit(tmp_path / "run" / "results.json", tmp_path / "pr") == 2
    err = capsys.readouterr().err.strip()
    assert "only full runs" in err and "\n" not in err
    assert not (tmp_path / "pr").exists()


def test_samples_cut_to_a_subset_are_refused_against_the_digest_from_the_data(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.eval.submit.submission import validate_submission

    _eval(tmp_path / "run", "--metrics", "accuracy")
    samples = tmp_path / "run" / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    samples.write_text("".join(lines[:-1]))
    results_path = tmp_path / "run" / "results.json"
    results = json.loads(results_path.read_text())
    results["dataset"].pop("split_n")
    results["dataset"].pop("ids_sha256")
    results_path.write_text(json.dumps(results))
    from mmspubench.errors import MMSpuBenchError

    with pytest.raises(MMSpuBenchError, match="not the published split's 12 ids"):
        validate_submission(results_path, "org/model", revision=hub.COMMIT)
