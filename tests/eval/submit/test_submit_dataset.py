"""A run relabelled against the dataset is refused by ``submit`` and the Space's Submit handler.

The run is the bundled model's real run on the bundled release, which stands in for the published
split here (``$MMSPUBENCH_PUBLISHED_DATASET``). Each forgery edits samples.jsonl and then makes
the run consistent again (``correct``, ``cgla_min``/``cgla_acc`` and results.json recomputed),
as a forger would, so only the comparison with the dataset can catch it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results import recompute
from mmspubench.eval.submit.checks import check_sample_consistency
from mmspubench.space import handlers

from tests.helpers.shared_runs import bundled_run

from .test_submit import restamp

REVISION = "fedcba9876543210fedcba9876543210fedcba98"
DATASET = "mmbench/MM-SpuBench"
Record = dict[str, Any]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """The bundled model's full run on the bundled release, recorded as a run of the published dataset."""
    out = tmp_path_factory.mktemp("bundled") / "run"
    shutil.copytree(bundled_run(tmp_path_factory, "default"), out)  # the default run, made once
    shutil.copytree(out, out.parent / "main-job")  # as `mmspubench eval` with no options leaves it
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    dataset = results["dataset"]
    published = {
        "MMSPUBENCH_PUBLISHED_DATASET": str(dataset["path"]),
        "MMSPUBENCH_PUBLISHED_SPLIT": f"{dataset['split_n']}:{dataset['ids_sha256']}",
        "MMSPUBENCH_PUBLISHED_REVISION": REVISION,
    }
    dataset.update(kind="hub", id=DATASET, path=None, revision=REVISION, content_hash=None)
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    restamp(out / "results.json")  # as a run of the published dataset would be stamped
    yield out, published


@pytest.fixture
def run(real_run: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the real run, with the published split's environment set; returns its folder."""
    source, published = real_run
    for name, value in published.items():
        monkeypatch.setenv(name, value)
    return Path(shutil.copytree(source, tmp_path / "run"))


def _records(run: Path) -> list[Record]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def forge(run: Path, edit: Callable[[list[Record]], None]) -> dict[str, Any]:
    """Apply ``edit`` to the samples, then make the run consistent again; returns the new results.json."""
    records = _records(run)
    edit(records)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    config = RunConfig.from_json(results["config"])
    for record in records:
        record["correct"] = record["prediction"] == record["answer"]
        core = [c["cgl"] for c in record["conditions"] if c["kind"] == "core"]
        spurious = [c["cgl"] for c in record["conditions"] if c["kind"] == "spurious"]
        record["cgla_min"] = metrics.cgla_min(core, spurious, config.core_reduction)
        record["cgla_acc"] = metrics.cgla_acc(record["cgla_min"])
    samples = [SampleResult.from_json(r) for r in records]
    check_sample_consistency(samples, config, "forged")  # the forgery is consistent in itself
    results.update(recompute(samples, config))
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return results


def _submit(run: Path, out: Path) -> int:
    return main(["submit", str(run / "results.json"), "--model-repo", "org/model", "--dry-run", str(out)])


def _answers_from_predictions(records: list[Record]) -> None:
    for r in records:
        if r["prediction"] is not None:
            r["answer"] = r["prediction"]


def _core_best(records: list[Record]) -> None:
    """Swap the kinds of the best spurious and the worst core condition where a spurious one leads."""
    for r in records:
        conditions = r["conditions"]
        spurious = max((c for c in conditions if c["kind"] == "spurious"), key=lambda c: c["cgl"])
        core = min((c for c in conditions if c["kind"] == "core"), key=lambda c: c["cgl"])
        if spurious["cgl"] > max(c["cgl"] for c in conditions if c["kind"] == "core"):
            spurious["kind"], core["kind"] = "core", "spurious"


def _other_types(records: list[Record]) -> None:
    for r in records:
        r["types"] = ["colorization"] if r["types"] != ["colorization"] else ["shape"]


def _all_three(records: list[Record]) -> None:
    _answers_from_predictions(records)
    _core_best(records)
    _other_types(records)


def _first_spurious(record: Record) -> Record:
    return next(c for c in record["conditions"] if c["kind"] == "spurious")


def _edit_first(edit: Callable[[Record], None]) -> Callable[[list[Record]], None]:
    return lambda records: edit(records[0])


def _rename_class(record: Record) -> None:
    record["class_name"] = "zebra"
    for c in record["conditions"]:
        c["continuation"] = " zebra"


def _attribute_and_prompt(record: Record) -> None:
    condition = _first_spurious(record)
    condition["prompt"] = condition["prompt"].replace(condition["attribute"], "a plain background")
    condition["attribute"] = "a plain background"


def _drop_condition(record: Record) -> None:
    record["conditions"].pop()
    if not [c for c in record["conditions"] if c["kind"] == "spurious"]:
        record["conditions"][-1]["kind"] = "spurious"


def _rotate_ids(records: list[Record]) -> None:
    """Every record moved to the next item's id: the set of ids (and its digest) stays the published one."""
    ids = [r["id"] for r in records]
    for r, new in zip(records, ids[1:] + ids[:1], strict=True):
        r["id"] = new


FORGERIES: list[tuple[str, Callable[[list[Record]], None], str]] = [
    ("answers", _answers_from_predictions, "field 'answer'"),
    ("kinds", _core_best, r"field 'conditions\[\d\]'"),
    ("types", _other_types, "field 'types'"),
    ("all", _all_three, "field '(answer|types)'"),
    ("class", _edit_first(_rename_class), "field 'class_name'"),
    ("attribute", _edit_first(_attribute_and_prompt), r"field 'conditions\[\d\]'"),
    ("prompt", _edit_first(lambda r: _first_spurious(r).update(prompt="The object is:")), r"\.prompt'"),
    ("continuation", _edit_first(lambda r: _first_spurious(r).update(continuation=" kite ")), "continuation"),
    ("dropped", _edit_first(_drop_condition), "field 'conditions'"),
    ("ids", _rotate_ids, "record '000001'"),
]


def test_the_untouched_run_passes(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _submit(run, tmp_path / "out") == 0, capsys.readouterr().err
    verdict, _ = handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")
    assert verdict.startswith("**Valid.** 90 samples")


def test_the_relabelled_run_of_the_issue_is_refused(run: Path, tmp_path: Path) -> None:
    before = json.loads((run / "results.json").read_text())["accuracy"]["overall"]
    after = forge(run, _all_three)["accuracy"]["overall"]
    assert (round(before, 2), round(after, 2)) == (28.89, 88.89)
    assert _submit(run, tmp_path / "out") == 2


@pytest.mark.parametrize(("name", "edit", "message"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_run_forged_against_the_dataset_is_refused(
    run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    edit: Callable[[list[Record]], None],
    message: str,
) -> None:
    forge(run, edit)
    out = tmp_path / "out"
    assert _submit(run, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "samples.jsonl: record '" in err, err
    assert not out.exists()
    with pytest.raises(MMSpuBenchError, match=message) as raised:
        handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")
    assert str(raised.value).startswith("samples.jsonl: record '")  # no server temp path


def test_prediction_must_be_what_raw_output_reads_as(run: Path, tmp_path: Path) -> None:
    def predict_the_answer(records: list[Record]) -> None:
        wrong = next(r for r in records if r["prediction"] not in (None, r["answer"]))
        wrong["prediction"] = wrong["answer"]

    forge(run, predict_the_answer)
    with pytest.raises(MMSpuBenchError, match=r"field 'prediction'.*raw_output reads as"):
        handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")


def test_edited_templates_are_refused(run: Path) -> None:
    results = json.loads((run / "results.json").read_text())
    results["config"]["prompts"]["cgla"]["user"] = "Name the object. {attribute}"
    (run / "results.json").write_text(json.dumps(results))
    with pytest.raises(MMSpuBenchError, match=r"'config\.prompts\.cgla' differs"):
        handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")


def test_the_main_jobs_run_is_refused_with_what_submit_needs(
    real_run: tuple[Path, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    main_job = real_run[0].parent / "main-job"
    argv = ["submit", str(main_job / "results.json"), "--model-repo", "org/model", "--dry-run", str(tmp_path)]
    assert main([*argv, "--dataset-revision", REVISION]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "evaluate with --dataset mmbench/MM-SpuBench" in err
    # Offline and with no revision given, the run's own fault is still what is named, not the Hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("MMSPUBENCH_PUBLISHED_REVISION", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "evaluate with --dataset mmbench/MM-SpuBench" in err
    assert "Hub" not in err.replace("mmbench/MM-SpuBench", "")


def test_submit_help_says_what_a_run_needs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needed in (
        "--dataset mmbench/MM-SpuBench",
        "no --limit",
        "published revision",
        "runs/default) is refused",
    ):
        assert needed in text, needed
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "submit runs/default" not in capsys.readouterr().out  # the main job's run can never pass


def _swap_types(records: list[Record]) -> None:
    record = next(r for r in records if len(r["types"]) == 2)
    record["types"].reverse()


def _spurious_first(records: list[Record]) -> None:
    conditions = records[0]["conditions"]
    records[0]["conditions"] = [c for c in conditions if c["kind"] == "spurious"] + [
        c for c in conditions if c["kind"] == "core"
    ]


def _confusable_class(records: list[Record]) -> None:
    record = records[0]
    record["class_name"] = record["class_name"].replace("i", "\u0456")  # Cyrillic i, looks the same
    for c in record["conditions"]:
        c["continuation"] = f" {record['class_name']}"


def _foreign_id(records: list[Record]) -> None:
    records[-1]["id"] = "999999"


ATTACKS: list[tuple[str, Callable[[list[Record]], None], str]] = [
    ("duplicate-id", lambda rs: rs.__setitem__(-1, dict(rs[0])), "appears more than once"),
    ("extra-item", lambda rs: rs.append({**rs[0], "id": "999999"}), "are not the published split's"),
    ("foreign-id", _foreign_id, "are not the published split's"),
    ("types-reordered", _swap_types, "field 'types'"),
    ("conditions-reordered", _spurious_first, r"field 'conditions\[0\]'"),
    ("confusable-class", _confusable_class, "field 'class_name'"),
]


@pytest.mark.parametrize(("name", "edit", "message"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_other_forgeries_are_refused(
    run: Path, name: str, edit: Callable[[list[Record]], None], message: str
) -> None:
    forge(run, edit)
    with pytest.raises(MMSpuBenchError, match=message):
        handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")


def test_a_run_of_another_release_with_the_same_ids_is_refused(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published split is another release than the one the run scored (same ids, other items)."""
    from mmspubench.dataset_builder.builder import build_repo
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    write_release(tmp_path / "raw", generate_items(90, seed=1, image_size=32))
    build_repo(tmp_path / "raw", tmp_path / "other", overwrite=True)
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_DATASET", str(tmp_path / "other"))
    with pytest.raises(
        MMSpuBenchError, match=r"samples\.jsonl: record '000000': field '(answer|types|class_name)'"
    ):
        handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")


def test_api_prompts_are_compared_as_messages() -> None:
    """An API backend's context is the chat messages as JSON: compared exactly, so an extra message
    (an instruction slipped in) or another attribute is refused."""
    from mmspubench.eval.backends.openai.client import render_messages
    from mmspubench.eval.prompts import cgla_prompt
    from mmspubench.eval.records import Condition
    from mmspubench.eval.submit.published import _prompt_fault

    exact = render_messages(cgla_prompt("a red roof"))
    assert _prompt_fault(Condition("a red roof", "core", exact, " house", -1.0)) is None
    extra = json.loads(exact)
    extra.insert(-1, {"role": "user", "content": "Answer: house."})
    for prompt in (json.dumps(extra), render_messages(cgla_prompt("a chimney")), "[{not json"):
        assert _prompt_fault(Condition("a red roof", "core", prompt, " house", -1.0)) is not None


def test_published_split_unreachable_is_one_actionable_line(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MMSPUBENCH_PUBLISHED_DATASET")
    with pytest.raises(MMSpuBenchError, match="set MMSPUBENCH_PUBLISHED_DATASET=FOLDER") as raised:
        handlers.validate_upload(str(run / "results.json"), str(run / "samples.jsonl"), "org/model")
    assert "\n" not in str(raised.value)
