"""The shipped lmms-eval task folder: lmms-eval's own TaskManager loads it (slow, its own environment),
its hooks give our figures, and its samples come back through `ingest lmms-eval`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.integrations.lmms_eval import TASK_DIR

from tests.dataset_builder import hub_fixtures as hub
from tests.helpers.costs import without_costs

LMMS_ENV = "MMSPUBENCH_LMMS_PYTHON"
"""The lmms-eval environment's python (`.ci/lmms-venv.sh DIR` builds one)."""
DRIVER = Path(__file__).with_name("lmms_driver.py")


def _utils() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("mm_spubench_lmms_utils", TASK_DIR / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _samples_file(path: Path, replies: dict[str, str]) -> Path:
    """What lmms-eval's --log_samples writes for the task, from the task's own hooks."""
    from mmspubench.dataset_builder.load import load_benchmark

    utils, lines = _utils(), []
    for number, row in enumerate(load_benchmark(hub.REPO_ID)):
        doc = dict(row)
        metrics = utils.process_results(doc, [replies[doc["id"]]])
        metrics[utils.METRIC]["harness_version"] = "0.4.1"  # as inside lmms-eval (none installed here)
        line = {"doc_id": number, "target": utils.doc_to_target(doc), "resps": [[replies[doc["id"]]]]}
        lines.append(json.dumps({**line, **metrics}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _replies() -> dict[str, str]:
    from mmspubench.dataset_builder.load import load_benchmark

    ids = load_benchmark(hub.REPO_ID)["id"]
    return {item_id: ["A", "B.", "(C)", "no"][i % 4] for i, item_id in enumerate(ids)}


def test_printed_folder_is_the_shipped_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["integrations", "lmms-eval"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == TASK_DIR and (folder / "mm_spubench.yaml").is_file() and (folder / "utils.py").is_file()


def test_ingested_lmms_samples_report_and_submit(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    run = tmp_path / "run"
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(run), "--dataset", hub.REPO_ID]
    assert main([*argv, "--model", "org/model"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["harness"]["name"] == "lmms_eval"
    assert main(["report", str(run / "results.json")]) == 0
    argv = [
        "submit",
        str(run / "results.json"),
        "--model-repo",
        "org/model",
        "--dry-run",
        str(tmp_path / "pr"),
    ]
    assert main([*argv, "--dataset-revision", hub.COMMIT]) == 0


def test_a_tampered_lmms_record_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    record = lines[0]["mm_spubench_acc"]
    record["correct"] = not record["correct"]
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    capsys.readouterr()
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(tmp_path / "run"), "--dataset", hub.REPO_ID]
    assert main([*argv, "--model", "org/model"]) == 2
    err = capsys.readouterr().err.strip()
    assert "score" in err and "\n" not in err and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_lmms_eval_task_manager_loads_the_folder_and_gives_our_figures(
    published: Path, tmp_path: Path
) -> None:
    python = os.environ.get(LMMS_ENV)
    if not python:
        pytest.skip(f"${LMMS_ENV} is not set (build the environment with .ci/lmms-venv.sh DIR)")
    from mmspubench.dataset_builder.load import built_folder_for
    from mmspubench.eval.prompts import mcq_prompt

    built = built_folder_for(published / "published")
    run = tmp_path / "eval"
    argv = ["eval", "--dataset", str(built), "--out", str(run), "--no-progress", "--metrics", "accuracy"]
    assert main(argv) == 0
    ours = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({s["id"]: s["raw_output"] for s in ours}))
    # The documented step: a copy of the task folder reading the local built folder.
    task = tmp_path / "task"
    assert main(["integrations", "lmms-eval", "--dataset", str(built), "--out", str(task)]) == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [python, str(DRIVER), str(task), str(answers)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["output_type"] == "generate_until" and got["visuals"] == len(ours)
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    for item in load_items(load_benchmark(str(built)), None, "test"):
        assert got["texts"][item.id] == mcq_prompt(item.question, item.options, "generate").user_text
    for sample in ours:
        record = got["records"][sample["id"]]
        assert (record["prediction"], record["correct"]) == (sample["prediction"], sample["correct"])
    accuracy = json.loads((run / "results.json").read_text())["accuracy"]
    figures = got["figures"]
    assert figures["mm_spubench_acc"] == accuracy["overall"]
    assert figures["mm_spubench_average"] == accuracy["average"]
    from mmspubench.dataset_builder.schema import SPURIOUS_TYPES

    for t in SPURIOUS_TYPES:
        assert figures[f"mm_spubench_{t.name}"] == accuracy["by_type"][t.abbrev]


def _circular_file(path: Path, reply: Any) -> tuple[Path, dict[str, float]]:
    """What lmms-eval's --log_samples writes for mm_spubench_circular (the task's own process_docs
    and hooks; ``reply(doc_id, item_id, rotation)`` the answer), and the task's aggregated figures."""
    from mmspubench.dataset_builder.load import load_benchmark

    utils, lines = _utils(), []
    per_metric: dict[str, list[Any]] = {}
    docs = utils.circular_docs(load_benchmark(hub.REPO_ID))
    for number, row in enumerate(docs):
        doc = dict(row)
        text = reply(number, doc["id"], doc[utils.ROTATION_KEY])
        metrics = utils.process_results_circular(doc, [text])
        for key, value in metrics.items():
            per_metric.setdefault(key, []).append(value)
        for record in metrics.values():
            record["harness_version"] = "0.7.3"  # as inside lmms-eval (none installed here)
        line = {"doc_id": number, "target": utils.doc_to_target(doc), "resps": [[text]]}
        lines.append(json.dumps({**line, **metrics}))
    path.write_text("\n".join(lines) + "\n")
    figures = {
        "mm_spubench_circular_acc": utils.aggregate_circular(per_metric["mm_spubench_circular_acc"]),
        "mm_spubench_vanilla_acc": utils.aggregate_vanilla(per_metric["mm_spubench_vanilla_acc"]),
        "mm_spubench_rotation_acc": utils.aggregate_rotation(per_metric["mm_spubench_rotation_acc"]),
        "mm_spubench_consistency": utils.aggregate_consistency(per_metric["mm_spubench_consistency"]),
    }
    return path, figures


def test_the_circular_task_shows_evals_rotations_and_its_figures_come_back_through_ingest(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items
    from mmspubench.eval.prompts import mcq_prompt

    utils = _utils()
    items = {i.id: i for i in load_items(load_benchmark(hub.REPO_ID), None, "test")}
    docs = utils.circular_docs(load_benchmark(hub.REPO_ID))
    assert len(docs) == 4 * len(items)
    assert [(d["id"], d[utils.ROTATION_KEY]) for d in docs] == [(i, k) for i in items for k in range(4)]
    for doc in docs:
        item, k = items[doc["id"]], doc[utils.ROTATION_KEY]
        shown = [item.options[(p - k) % 4] for p in range(4)]  # published j shown at (j + k) mod 4
        assert utils.doc_to_text(doc) == mcq_prompt(item.question, shown, "generate").user_text
        assert utils.doc_to_target(doc) == "ABCD"[("ABCD".index(item.answer) + k) % 4]
    # An always-"A" model: never right in all four rotations, right in exactly one of each item's.
    samples, figures = _circular_file(tmp_path / "a.jsonl", lambda *_: "A")
    assert figures["mm_spubench_circular_acc"] == 0.0 and figures["mm_spubench_consistency"] == 0.0
    assert figures["mm_spubench_rotation_acc"] == 25.0
    # Mixed replies: the task's aggregations equal what ingest recomputes with eval's functions.
    samples, figures = _circular_file(
        tmp_path / "s.jsonl", lambda n, i, k: ["A", "B.", "(C)", "no", "D"][n % 5]
    )
    run = tmp_path / "run"
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(run), "--dataset", hub.REPO_ID]
    assert main([*argv, "--model", "org/model"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["config"]["metrics"] == ["accuracy", "circular"]
    circular = results["circular"]
    assert figures == {
        "mm_spubench_circular_acc": circular["accuracy"],
        "mm_spubench_vanilla_acc": circular["vanilla_accuracy"],
        "mm_spubench_rotation_acc": circular["rotation_accuracy"],
        "mm_spubench_consistency": circular["consistency"],
    }
    assert circular["vanilla_accuracy"] == results["accuracy"]["overall"]


def test_a_tampered_circular_record_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples, _ = _circular_file(tmp_path / "s.jsonl", lambda *_: "B")
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for edit, expected in (("correct", "score"), ("rotation", "appears twice"), ("drop", "lack an answer")):
        copy = [dict(line) for line in lines]
        record = dict(copy[2]["mm_spubench_circular_acc"])
        if edit == "correct":
            record["correct"] = not record["correct"]
        elif edit == "rotation":
            record["rotation"] = 1  # now rotation 1 twice, rotation 2 missing
        copy[2]["mm_spubench_circular_acc"] = record
        if edit == "drop":
            del copy[2]
        samples.write_text("\n".join(json.dumps(line) for line in copy) + "\n")
        capsys.readouterr()
        out = tmp_path / f"run-{edit}"
        argv = ["ingest", "lmms-eval", str(samples), "--out", str(out), "--dataset", hub.REPO_ID]
        assert main([*argv, "--model", "org/model"]) == 2
        err = capsys.readouterr().err.strip()
        assert expected in err and "\n" not in err and not out.exists(), (edit, err)


@pytest.mark.slow
def test_the_circular_task_on_evals_answers_gives_evals_circular_run_item_by_item(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "eval"
    argv = ["eval", "--dataset", hub.REPO_ID, "--out", str(run), "--no-progress", "--answer-mode", "generate"]
    assert main([*argv, "--metrics", "accuracy,circular"]) == 0
    ours = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    raw = {(s["id"], r["rotation"]): r["raw_output"] for s in ours for r in s["rotations"]}
    samples, figures = _circular_file(tmp_path / "s.jsonl", lambda n, i, k: raw[(i, k)])
    back = tmp_path / "ingested"
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(back), "--dataset", hub.REPO_ID]
    assert main([*argv, "--model", "org/model"]) == 0
    expected = json.loads((run / "results.json").read_text())
    got = json.loads((back / "results.json").read_text())
    assert got["circular"] == expected["circular"] and got["accuracy"] == expected["accuracy"]
    assert figures["mm_spubench_circular_acc"] == expected["circular"]["accuracy"]
    lines = [json.loads(line) for line in (back / "samples.jsonl").read_text().splitlines()]
    # lmms-eval's log carries no token counts of ours
    assert [(s["id"], s["rotations"]) for s in lines] == [
        (s["id"], without_costs(s["rotations"])) for s in ours
    ]


@pytest.mark.slow
def test_lmms_eval_task_manager_loads_the_circular_task_and_gives_evals_circular_figures(
    published: Path, tmp_path: Path
) -> None:
    python = os.environ.get(LMMS_ENV)
    if not python:
        pytest.skip(f"${LMMS_ENV} is not set (build the environment with .ci/lmms-venv.sh DIR)")
    from mmspubench.dataset_builder.load import built_folder_for

    built = built_folder_for(published / "published")
    run = tmp_path / "eval"
    argv = ["eval", "--dataset", str(built), "--out", str(run), "--no-progress", "--answer-mode", "generate"]
    assert main([*argv, "--metrics", "accuracy,circular"]) == 0
    ours = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    answers = {f"{s['id']}#{r['rotation']}": r["raw_output"] for s in ours for r in s["rotations"]}
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    task = tmp_path / "task"
    assert main(["integrations", "lmms-eval", "--dataset", str(built), "--out", str(task)]) == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [python, str(DRIVER), str(task), str(tmp_path / "answers.json"), "mm_spubench_circular"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for sample in ours:
        for r in sample["rotations"]:
            record = got["records"][f"{sample['id']}#{r['rotation']}"]
            assert (record["prediction"], record["correct"]) == (r["prediction"], r["correct"])
    circular = json.loads((run / "results.json").read_text())["circular"]
    assert got["figures"]["mm_spubench_circular_acc"] == circular["accuracy"]
    assert got["figures"]["mm_spubench_consistency"] == circular["consistency"]
    assert got["figures"]["mm_spubench_vanilla_acc"] == circular["vanilla_accuracy"]
