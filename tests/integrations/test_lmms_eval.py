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
