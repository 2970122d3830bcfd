from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries
from mmspubench.cli import main
from mmspubench.dataset_builder.schema import FEATURES, SOURCES, TYPE_NAMES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import cgla_prompt, prompt_spec
from mmspubench.eval.records import Condition, SampleResult
from mmspubench.eval.submit import submission as submit
from mmspubench.eval.submit.submission import YAML_PATH, validate_submission

from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

REVISION = "0123456789abcdef0123456789abcdef01234567"
DATASET = "mmbench/MM-SpuBench"
PUBLISHED_IDS = [f"{i:06d}" for i in range(20)]
"""The ids of the published split in these tests: the 20 items ``make_run`` writes."""


def set_published_split(monkeypatch: pytest.MonkeyPatch, ids: list[str] = PUBLISHED_IDS) -> None:
    """The published split's size and id digest, and a local copy of its items, as the Space sets
    them (no Hub in tests)."""
    digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_SPLIT", f"{len(ids)}:{digest}")
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_DATASET", str(_published_folder(Path(os.environ["HF_HOME"]))))


CORE, SPURIOUS, OPTIONS = ("core 0", "core 1"), ("spu 0", "spu 1"), ["opt a", "opt b", "opt c", "opt d"]
"""Attributes and options of every published item of these tests."""


@functools.cache
def _published_folder(home: Path) -> Path:
    """A built dataset folder holding the 20 items ``_sample`` records (written once per session)."""
    import datasets
    from PIL import Image

    folder = home / "published-mm-spubench"
    rows = [_sample(i) for i in range(20)]
    columns = {
        "id": [s.id for s in rows],
        "image": [Image.new("RGB", (8, 8)) for _ in rows],
        "question": ["q?" for _ in rows],
        "options": [OPTIONS for _ in rows],
        "answer": [s.answer for s in rows],
        "class_name": [s.class_name for s in rows],
        "core_attributes": [list(CORE) for _ in rows],
        "spurious_attributes": [list(SPURIOUS) for _ in rows],
        "spurious_types": [list(s.types) for s in rows],
        "source": [SOURCES[0] for _ in rows],
    }
    (folder / "data").mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns, features=FEATURES).to_parquet(
        str(folder / "data" / "test-00000-of-00001.parquet")
    )
    return folder


@pytest.fixture(autouse=True)
def published_split(monkeypatch: pytest.MonkeyPatch) -> None:
    set_published_split(monkeypatch)


def _rendered(attribute: str) -> str:
    """g(attribute) through a minimal chat template."""
    prompt = cgla_prompt(attribute)
    return f"<s>{prompt.system}</s><u><image>{prompt.user_text}</u><a>{prompt.assistant_prefix}"


def _sample(i: int) -> SampleResult:
    types = (TYPE_NAMES[i % 9],) if i % 4 else (TYPE_NAMES[i % 9], TYPE_NAMES[(i + 3) % 9])
    core = (-2.0 - 0.1 * i, -3.0)
    spurious = (-2.5 + 0.05 * i, -4.0)
    conditions = tuple(
        Condition(a, "core", _rendered(a), " cls", c) for a, c in zip(CORE, core, strict=True)
    ) + tuple(
        Condition(a, "spurious", _rendered(a), " cls", s) for a, s in zip(SPURIOUS, spurious, strict=True)
    )
    value = metrics.cgla_min(core, spurious, "best")
    prediction = "AB"[i % 2] if i % 5 else None
    return SampleResult(
        id=f"{i:06d}",
        types=types,
        answer="A",
        prediction=prediction,
        correct=prediction == "A",
        raw_output=prediction or "?",
        option_scores=None,
        class_name="cls",
        conditions=conditions,
        cgla_min=value,
        cgla_acc=metrics.cgla_acc(value),
    )


def make_run(root: Path, model_id: str = "org/model", revision: str = REVISION, **config_kw: Any) -> Path:
    """A consistent run folder built with the eval part's own writers; returns results.json."""
    samples = [_sample(i) for i in range(20)]
    config = RunConfig(model=model_id, dataset=DATASET, prompts=prompt_spec(), **config_kw)
    dataset = {"id": DATASET, "revision": revision}
    # Stamped as the runner stamps them: the config identity, the dataset and the model identity.
    return write_run_folder(root, config, samples, dataset, model_identity(model_id)) / "results.json"


def restamp(results_path: Path) -> None:
    """Stamp every sample with the run results.json now describes: what a run made with the edited
    config, dataset or model would carry (a test's shortcut for making such a run)."""
    from mmspubench.eval.submit.checks import expected_stamp

    results = json.loads(results_path.read_text())
    stamp = expected_stamp(results, RunConfig.from_json(results["config"]))
    samples = results_path.parent / "samples.jsonl"
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    samples.write_text("".join(json.dumps({**line, "run": stamp}) + "\n" for line in lines))


def _submit_dry_run(results_path: Path, out: Path) -> int:
    """``submit RESULTS --model-repo org/model --dry-run OUT`` against the published revision."""
    argv = ["submit", str(results_path), "--model-repo", "org/model", "--dry-run", str(out)]
    return main([*argv, "--dataset-revision", REVISION])


def test_dry_run_yaml_parses_with_huggingface_hub(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results_path = make_run(tmp_path / "run")
    out = tmp_path / "out"
    status = _submit_dry_run(results_path, out)
    assert status == 0
    written = out / YAML_PATH
    entries = parse_eval_result_entries(yaml.safe_load(written.read_text()))
    results = json.loads(results_path.read_text())
    by_task = {e.task_id: e for e in entries}
    assert set(by_task) == {"mcq_accuracy"}  # the tasks eval.yaml declares; CGLA is not one
    assert by_task["mcq_accuracy"].value == round(results["accuracy"]["overall"] / 100, 6)
    for entry in entries:
        assert entry.dataset_id == DATASET
        assert entry.dataset_revision == REVISION
        assert entry.source_url == f"https://huggingface.co/datasets/{DATASET}"
        assert entry.date == results["created_at"]
    assert "wrote" in capsys.readouterr().out
    assert [p.name for p in out.rglob("*") if p.is_file()] == ["mm-spubench.yaml"]


def test_submit_prints_no_library_progress_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reading the published split (datasets' "Generating test split" bar) draws nothing, whatever
    an earlier caller set; the bars are as they were afterwards."""
    from datasets import utils as ds_utils

    ds_utils.enable_progress_bars()
    results_path = make_run(tmp_path / "run")
    capsys.readouterr()
    assert _submit_dry_run(results_path, tmp_path / "out") == 0
    err = capsys.readouterr().err
    assert "Generating" not in err and "examples/s" not in err, err
    assert not ds_utils.are_progress_bars_disabled()


def test_revision_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    submission = validate_submission(make_run(tmp_path / "run"), "org/model")
    assert submission.dataset_revision == REVISION and submission.n == 20


def _edit(results_path: Path, edit: Any) -> None:
    results = json.loads(results_path.read_text())
    edit(results)
    results_path.write_text(json.dumps(results))  # json.dumps writes NaN as NaN, as a forger would


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r["accuracy"].update(overall=r["accuracy"]["overall"] + 5.0),
            "field 'accuracy.overall': submitted",
        ),
        (lambda r: r["cgla"]["by_type"].update(BG=r["cgla"]["by_type"]["BG"] - 1.0), "'cgla.by_type.BG'"),
        (lambda r: r["accuracy"]["ci95"]["overall"].__setitem__(0, 1.0), r"accuracy.ci95.overall\[0\]"),
        (lambda r: r["cgla"].update(mean_cgla_min=float("nan")), "not a finite number"),
        (lambda r: r["accuracy"]["by_type"].update(TN=140.0), r"outside \[0, 100\]"),
        (lambda r: r["accuracy"].pop("unparsed"), "'accuracy.unparsed' is missing"),
        (lambda r: r["dataset"].update(revision="f" * 40), "is not the published revision"),
        (lambda r: r["dataset"].update(id="./local-folder"), "is not the published dataset"),
        (lambda r: r["dataset"].update(n=19), "samples.jsonl holds 20 records"),
        (lambda r: r["config"].update(limit=20), "only full runs"),
        (lambda r: r.update(package_version="0.1 <img src=https://evil.example>"), "not a package version"),
        (lambda r: r.update(created_at="[today](https://evil.example)"), "not an ISO time"),
    ],
)
def test_edited_results_are_refused(tmp_path: Path, edit: Any, message: str) -> None:
    results_path = make_run(tmp_path / "run")
    _edit(results_path, edit)
    with pytest.raises(MMSpuBenchError, match=message):
        validate_submission(results_path, "org/model", revision=REVISION)


def test_cli_refuses_edited_aggregates_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = make_run(tmp_path / "run")
    _edit(results_path, lambda r: r["accuracy"]["by_type"].update(BG=99.0))
    out = tmp_path / "out"
    status = _submit_dry_run(results_path, out)
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "accuracy.by_type.BG" in err and "recomputed" in err
    assert not out.exists()


def _edit_samples(results_path: Path, edit: Any) -> None:
    path = results_path.parent / "samples.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s[0].update(correct=not s[0]["correct"]), "field 'correct'"),
        (lambda s: s[3]["conditions"][0].update(cgl=float("nan")), "'cgl' must be a finite number"),
        (lambda s: s[3]["conditions"][0].update(cgl=2.0), "not a finite log-probability"),
        (lambda s: s[4].update(cgla_min=5.0), "does not follow from its conditions"),
        (lambda s: s.append(dict(s[0])), "appears more than once"),
    ],
)
def test_edited_samples_are_refused(tmp_path: Path, edit: Any, message: str) -> None:
    results_path = make_run(tmp_path / "run")
    _edit_samples(results_path, edit)
    with pytest.raises(MMSpuBenchError, match=message):
        validate_submission(results_path, "org/model", revision=REVISION)


def test_other_refusals(tmp_path: Path) -> None:
    results_path = make_run(tmp_path / "run")
    with pytest.raises(MMSpuBenchError, match="the run evaluated 'org/model', not 'org/other'"):
        validate_submission(results_path, "org/other", revision=REVISION)
    with pytest.raises(MMSpuBenchError, match="not a valid repo id"):
        validate_submission(results_path, "bad repo id!", revision=REVISION)
    (results_path.parent / "samples.jsonl").unlink()
    with pytest.raises(MMSpuBenchError, match="missing; submit needs the samples"):
        validate_submission(results_path, "org/model", revision=REVISION)


def test_revision_unknown_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MMSPUBENCH_PUBLISHED_REVISION", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MMSpuBenchError, match="pass --dataset-revision"):
        validate_submission(make_run(tmp_path / "run"), "org/model")


def _hub_lookup_raising(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    import huggingface_hub
    from mmspubench.dataset_builder import hub

    def dataset_info(self: Any, repo_id: str) -> Any:
        raise error

    monkeypatch.delenv(submit.REVISION_ENV, raising=False)
    monkeypatch.setattr(hub, "hub_offline", lambda **_: False)
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", dataset_info)


def test_unreachable_hub_becomes_one_actionable_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _hub_lookup_raising(monkeypatch, ConnectionError("no route to host"))
    with pytest.raises(
        MMSpuBenchError, match=r"'org/data' on the Hub \(ConnectionError\); pass --dataset-revision"
    ):
        submit.published_revision("org/data")


def test_a_bug_in_the_revision_lookup_is_not_disguised_as_a_hub_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _hub_lookup_raising(monkeypatch, TypeError("unexpected argument"))
    with pytest.raises(TypeError, match="unexpected argument"):
        submit.published_revision("org/data")
