"""``submit`` of a run with the blind view: a ``blind_accuracy`` entry (a task of eval.yaml), and the
confound sections recomputed from samples.jsonl before they reach the results dataset."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import Answer
from mmspubench.eval.submit.submission import YAML_PATH

from tests.eval.submit.test_submit import DATASET, REVISION, _sample, _submit_dry_run, published_split
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests


def _blind_run(root: Path) -> Path:
    """The 20 items of test_submit's runs, each also answered blind: right on every third item."""
    blind = ["A" if i % 3 == 0 else "C" for i in range(20)]  # the raw output the parser reads
    samples = [replace(_sample(i), blind=Answer(b, b == "A", b, None)) for i, b in enumerate(blind)]
    config = RunConfig(
        model="org/model", dataset=DATASET, prompts=prompt_spec(), metrics=("accuracy", "cgla", "blind")
    )
    model = model_identity()
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model) / "results.json"


def _refused(capsys: pytest.CaptureFixture[str], results_path: Path, out: Path, *needles: str) -> None:
    assert _submit_dry_run(results_path, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()
    for needle in needles:
        assert needle in err, err


def test_a_blind_run_submits_its_blind_accuracy_as_a_task(tmp_path: Path) -> None:
    results_path = _blind_run(tmp_path / "run")
    assert _submit_dry_run(results_path, tmp_path / "out") == 0
    entries = parse_eval_result_entries(yaml.safe_load((tmp_path / "out" / YAML_PATH).read_text()))
    by_task = {e.task_id: e.value for e in entries}
    # blind right on items 0, 3, 6, 9, 12, 15, 18: 7 of 20
    assert by_task == {"mcq_accuracy": pytest.approx(by_task["mcq_accuracy"]), "blind_accuracy": 0.35}
    assert json.loads(results_path.read_text())["blind"]["accuracy"] == 35.0


def test_a_tampered_blind_figure_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results_path = _blind_run(tmp_path / "run")
    results = json.loads(results_path.read_text())
    results["blind"]["gain"] = 99.0
    results_path.write_text(json.dumps(results))
    _refused(capsys, results_path, tmp_path / "out", "field 'blind.gain'", "disagrees")


def test_a_confound_section_the_run_did_not_ask_for_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = _blind_run(tmp_path / "run")
    results = json.loads(results_path.read_text())
    results["circular"] = {"accuracy": 100.0}
    results_path.write_text(json.dumps(results))
    _refused(capsys, results_path, tmp_path / "out", "field 'circular'")
