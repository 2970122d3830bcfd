"""The end of a sweep (report, compare, plots) and the check of a fetched run, on hand-made run folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts, results
from mmspubench.eval.config import RunConfig
from mmspubench.eval.submit.checks import expected_stamp
from mmspubench.sweep import finish
from mmspubench.sweep.spec import PlannedRun
from mmspubench.sweep.verify import other_run, verify_run

from tests.eval.compare_fakes import DATASET, Item, sample

ITEMS = [
    Item("000", ("background",), True, 0.5),
    Item("001", ("shape",), False, 0.0),
    Item("002", ("background", "shape"), True, 1.0),
]


def _planned(root: Path, variant: str, **options: Any) -> PlannedRun:
    config = RunConfig(
        model="m", dataset="/data/x", prompt_variant=variant, prompts=prompts.prompt_spec(variant), **options
    )
    return PlannedRun(f"m--{variant}", "m", variant, root / f"m--{variant}", {}, config, ())


def _write(run: PlannedRun, items: list[Item] = ITEMS, split_n: int | None = None) -> Path:
    samples = [sample(i) for i in items]
    timing = {"load_seconds": 0.0, "accuracy_seconds": 0.0, "cgla_seconds": 0.0, "total_seconds": 0.0}
    dataset = {**DATASET, "split_n": len(items) if split_n is None else split_n}
    obj = results.build_results(run.config, {"id": "m"}, dataset, samples, [i.id for i in items], timing)
    run.folder.mkdir(parents=True)
    (run.folder / results.MANIFEST_NAME).write_text("{}", encoding="utf-8")
    results.write_samples_atomic(run.folder / results.SAMPLES_NAME, samples, expected_stamp(obj, run.config))
    results.write_json_atomic(run.folder / results.RESULTS_NAME, obj)
    return run.folder


def test_the_report_and_each_variant_against_standard_with_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    runs = [_planned(tmp_path, "standard"), _planned(tmp_path, "core-focus")]
    _write(runs[0])
    _write(runs[1], [Item(i.id, i.types, not i.correct, i.cgla_min) for i in ITEMS])
    report = finish.write_report(tmp_path, runs, plot=True)
    assert report is not None and report.read_text(encoding="utf-8").count("| m |") == 2
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
    [md] = finish.write_compares(tmp_path, runs, plot=True)
    doc = json.loads(md.with_suffix(".json").read_text(encoding="utf-8"))
    overall = doc["groups"][0]  # all items first
    assert (
        doc["n"] == 3
        and overall["accuracy"]["a"] == pytest.approx(200 / 3)
        and overall["accuracy"]["b"] == pytest.approx(100 / 3)
    )
    assert md.name == "m--core-focus-vs-standard.md" and md.with_suffix(".png").is_file()


def test_a_fetched_run_verifies_only_when_every_figure_follows_from_its_samples(tmp_path: Path) -> None:
    run = _planned(tmp_path, "standard")
    folder = _write(run)
    verify_run(folder, run)  # as written: accepted
    path = folder / results.RESULTS_NAME
    original = path.read_text(encoding="utf-8")
    doc = json.loads(original)
    doc["cgla"]["acc"] = 100.0
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(MMSpuBenchError, match=r"field 'cgla.acc': submitted value 100.0 disagrees"):
        verify_run(folder, run)
    path.write_text(original, encoding="utf-8")
    lines = (folder / results.SAMPLES_NAME).read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / results.SAMPLES_NAME).write_text(
        lines[0].replace('"correct": true', '"correct": false') + "".join(lines[1:]), encoding="utf-8"
    )
    with pytest.raises(MMSpuBenchError, match=r"record '000': field 'correct'"):
        verify_run(folder, run)
    (folder / results.SAMPLES_NAME).write_text("".join(lines[:2]), encoding="utf-8")
    with pytest.raises(MMSpuBenchError, match=r"field 'dataset.n': 3 but samples.jsonl holds 2 records"):
        verify_run(folder, run)


def test_a_fetched_run_with_a_forged_confound_section_or_foreign_samples_is_refused(tmp_path: Path) -> None:
    # The sweep's report shows every section of results.json, so each is recomputed as submit does.
    run = _planned(tmp_path, "standard")
    folder = _write(run)
    path = folder / results.RESULTS_NAME
    original = path.read_text(encoding="utf-8")
    doc = json.loads(original)
    doc["circular"] = {"accuracy": 99.0}  # a view the run's --metrics never asked for
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(MMSpuBenchError, match=r"field 'circular'"):
        verify_run(folder, run)
    path.write_text(original, encoding="utf-8")
    samples = folder / results.SAMPLES_NAME
    samples.write_text(samples.read_text(encoding="utf-8").replace('"run": "', '"run": "0'), encoding="utf-8")
    with pytest.raises(MMSpuBenchError, match=r"record '000': field 'run': was scored by run"):
        verify_run(folder, run)


def test_a_run_of_other_options_is_not_the_planned_one(tmp_path: Path) -> None:
    run = _planned(tmp_path, "standard")
    folder = _write(run)
    assert other_run(folder, run) is None
    reseeded = _planned(tmp_path, "standard", seed=5)
    assert "field 'config.seed': 0 is not the planned 5" in str(other_run(folder, reseeded))
    with pytest.raises(MMSpuBenchError, match=r"config\.seed"):
        verify_run(folder, reseeded)
    pinned = _planned(tmp_path, "standard", dataset_revision="abc1234")
    assert "field 'dataset.revision': '' is not the planned 'abc1234'" in str(other_run(folder, pinned))


def test_a_fetched_run_of_fewer_items_than_planned_is_refused(tmp_path: Path) -> None:
    # The plan is the whole split (3 items); the job's folder holds a `--limit 2` run of it, consistent
    # in itself (its figures follow from its 2 samples), or a run cut short that records no limit.
    run = _planned(tmp_path, "standard")
    limited = _planned(tmp_path / "limited", "standard", limit=2)
    folder = _write(limited, ITEMS[:2], split_n=3)
    verify_run(folder, limited)  # what it is: a 2-item run, accepted as that
    with pytest.raises(MMSpuBenchError, match=r"field 'config.limit': 2 is not the planned None"):
        verify_run(folder, run)
    assert "config.limit" in str(other_run(folder, run))
    doc = json.loads((folder / results.RESULTS_NAME).read_text(encoding="utf-8"))
    doc["config"]["limit"] = None
    results.write_json_atomic(folder / results.RESULTS_NAME, doc)
    with pytest.raises(
        MMSpuBenchError, match=r"field 'dataset.n': 2 items, the plan asks 3 \(the whole split of 3\)"
    ):
        verify_run(folder, run)


RIGHT, WRONG = (0.0, -1.0, -2.0, -3.0), (-1.0, 0.0, -2.0, -3.0)
"""Letter scores of a logprob answer: argmax A (the gold letter of every fake item), argmax B."""


def _logprob_sample(item: Item, gray: tuple[float, ...]) -> Any:
    """``item``'s logprob-mode sample with its grayscale answer (the argmax of ``gray``)."""
    from dataclasses import replace

    from mmspubench.eval.records import Answer, InterventionAnswer

    scored = sample(Item(item.id, item.types, item.correct, scores=RIGHT if item.correct else WRONG))
    letter = "ABCD"[gray.index(max(gray))]
    entry = InterventionAnswer(
        "grayscale", ("colorization",), "ab" * 32, Answer(letter, letter == "A", None, gray), None, None, None
    )
    return replace(scored, option_probs=None, interventions=(entry,))


def _interventions_run(run: PlannedRun, samples: list[Any]) -> dict[str, Any]:
    timing = {"load_seconds": 0.0, "accuracy_seconds": 0.0, "total_seconds": 0.0}
    ids = [s.id for s in samples]
    obj = results.build_results(run.config, {"id": "m"}, {**DATASET, "split_n": 3}, samples, ids, timing)
    run.folder.mkdir(parents=True, exist_ok=True)
    (run.folder / results.MANIFEST_NAME).write_text("{}", encoding="utf-8")
    results.write_samples_atomic(run.folder / results.SAMPLES_NAME, samples, expected_stamp(obj, run.config))
    results.write_json_atomic(run.folder / results.RESULTS_NAME, obj)
    return obj


def test_a_fetched_interventions_run_is_refused_when_its_section_or_answers_are_forged(
    tmp_path: Path,
) -> None:
    # The sweep's report and compare read the interventions section: it is recomputed as submit
    # does, and each intervention's answer re-derived from its letter scores.
    from dataclasses import replace

    run = _planned(
        tmp_path,
        "standard",
        metrics=("accuracy", "interventions"),
        interventions=("grayscale",),
        answer_mode="logprob",
    )
    plain = [Item(i.id, i.types, i.correct) for i in ITEMS]  # right, wrong, right
    samples = [_logprob_sample(i, g) for i, g in zip(plain, (WRONG, RIGHT, RIGHT), strict=True)]
    obj = _interventions_run(run, samples)
    gray = obj["interventions"]["by_intervention"]["grayscale"]
    assert gray["accuracy"]["overall"] == pytest.approx(200 / 3) and gray["change"]["gain"] == 0.0
    assert gray["flip_rate"] == pytest.approx(200 / 3)
    verify_run(run.folder, run)  # as written: accepted
    forged = json.loads(json.dumps(obj))
    forged["interventions"]["by_intervention"]["grayscale"]["change"]["gain"] = -50.0
    results.write_json_atomic(run.folder / results.RESULTS_NAME, forged)
    with pytest.raises(MMSpuBenchError, match=r"field 'interventions.by_intervention.grayscale.change.gain'"):
        verify_run(run.folder, run)
    del forged["interventions"]
    results.write_json_atomic(run.folder / results.RESULTS_NAME, forged)
    with pytest.raises(MMSpuBenchError, match=r"field 'interventions'"):
        verify_run(run.folder, run)
    # The first item's grayscale answer set to A (right) while its scores' argmax is B, and the
    # section made to follow from it: the answer itself is re-read from the scores.
    entry = samples[0].interventions[0]
    right = replace(entry, reply=replace(entry.reply, prediction="A", correct=True))
    obj = _interventions_run(run, [replace(samples[0], interventions=(right,)), *samples[1:]])
    assert obj["interventions"]["by_intervention"]["grayscale"]["accuracy"]["overall"] == 100.0
    with pytest.raises(
        MMSpuBenchError, match=r"record '000': field 'interventions.prediction': grayscale: .*argmax 'B'"
    ):
        verify_run(run.folder, run)


def test_a_fetched_run_of_other_interventions_is_not_the_planned_one(tmp_path: Path) -> None:
    plain = [Item(i.id, i.types, i.correct) for i in ITEMS]
    options: dict[str, Any] = {"metrics": ("accuracy", "interventions"), "answer_mode": "logprob"}
    asked = _planned(tmp_path, "standard", interventions=("grayscale",), **options)
    _interventions_run(asked, [_logprob_sample(i, RIGHT) for i in plain])
    other = _planned(tmp_path, "standard", interventions=("grayscale", "blur"), **options)
    assert "field 'config.interventions': ['grayscale'] is not the planned ['grayscale', 'blur']" in str(
        other_run(asked.folder, other)
    )
    with pytest.raises(MMSpuBenchError, match=r"config\.interventions"):
        verify_run(asked.folder, other)
    without = _planned(tmp_path, "standard", answer_mode="logprob")
    assert "config.metrics" in str(other_run(asked.folder, without))
