"""The lmms-eval intervention tasks (mm_spubench_<name>): one YAML per built-in intervention, the image
changed in doc_to_visual exactly as `mmspubench eval --interventions` changes it, and their samples
refused by `ingest lmms-eval` (read as a vanilla run they would be mislabelled)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from mmspubench.cli import main
from mmspubench.eval.intervention_names import BUILTIN_NAMES
from mmspubench.eval.interventions import INTERVENTIONS, pixel_digest
from mmspubench.integrations.lmms_eval import INTERVENTION_TASKS, TASK_DIR, TASK_FILES
from PIL import Image

from tests.dataset_builder import hub_fixtures as hub
from tests.integrations.test_lmms_eval import _utils


class _Loader(yaml.SafeLoader):
    """lmms-eval's YAML: `!function module.name` tags."""


def _function(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> tuple[str, str]:
    return ("function", str(loader.construct_scalar(node)))


_Loader.add_constructor("!function", _function)


def _config(name: str, folder: Path = TASK_DIR) -> dict[str, Any]:
    """A task's YAML as lmms-eval's load_yaml_config merges it (include first, then the file)."""
    config = yaml.load((folder / name).read_text(encoding="utf-8"), Loader=_Loader)
    include = config.pop("include", None)
    return {**(_config(include, folder) if include else {}), **config}


def test_every_builtin_intervention_has_a_task_whose_hooks_exist() -> None:
    utils = _utils()
    assert tuple(f"mm_spubench_{n}" for n in BUILTIN_NAMES) == INTERVENTION_TASKS
    shipped = sorted(p.name for p in TASK_DIR.iterdir() if p.suffix == ".yaml")
    assert shipped == sorted(n for n in TASK_FILES if n.endswith(".yaml"))
    vanilla = _config("mm_spubench.yaml")
    for name in BUILTIN_NAMES:
        config = _config(f"mm_spubench_{name}.yaml")
        assert config["task"] == f"mm_spubench_{name}" and config["tag"] == "mm_spubench_interventions"
        assert config["doc_to_visual"] == ("function", f"utils.doc_to_visual_{name}")
        assert config["process_results"] == ("function", f"utils.process_results_{name}")
        same = {
            k: v for k, v in config.items() if k not in ("task", "tag", "doc_to_visual", "process_results")
        }
        assert same == {
            k: v for k, v in vanilla.items() if k not in ("task", "doc_to_visual", "process_results")
        }
        for key in ("doc_to_visual", "process_results", "doc_to_text", "doc_to_target"):
            assert callable(getattr(utils, config[key][1].removeprefix("utils.")))


@pytest.fixture(scope="module")
def evaluated(published: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """`mmspubench eval` (generate mode) under every built-in intervention: its samples."""
    run = tmp_path_factory.mktemp("eval") / "run"
    argv = ["eval", "--dataset", hub.REPO_ID, "--out", str(run), "--no-progress", "--answer-mode", "generate"]
    assert (
        main([*argv, "--metrics", "accuracy,interventions", "--interventions", ",".join(BUILTIN_NAMES)]) == 0
    )
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def test_the_tasks_show_evals_intervened_pixels_and_score_evals_answers(
    published: Path, evaluated: list[dict[str, Any]]
) -> None:
    from mmspubench.dataset_builder.load import load_benchmark

    utils = _utils()
    docs = {row["id"]: dict(row) for row in load_benchmark(hub.REPO_ID)}
    changed: set[str] = set()  # the interventions that changed some image (a grey one stays grey)
    for sample in evaluated:
        doc = docs[sample["id"]]
        assert [i["name"] for i in sample["interventions"]] == list(BUILTIN_NAMES)
        for answer in sample["interventions"]:
            name = answer["name"]
            (image,) = getattr(utils, f"doc_to_visual_{name}")(doc)
            assert pixel_digest(image) == answer["digest"]
            if answer["digest"] != pixel_digest(utils.doc_to_visual(doc)[0]):
                changed.add(name)
            out = getattr(utils, f"process_results_{name}")(doc, [answer["raw_output"]])
            record = out[utils.METRIC]
            assert all(value is record for value in out.values())
            assert (record["prediction"], record["correct"]) == (answer["prediction"], answer["correct"])
            assert record[utils.INTERVENTION_KEY] == name and record[utils.DIGEST_KEY] == answer["digest"]
            assert record["user_text"] == utils.doc_to_text(doc)
    assert changed >= {"grayscale", "noise"}  # blur and equalize leave the fixture's 16 px flat scenes
    # A larger, textured image: every task shows its intervention's own transform of it, changed.
    rng = np.random.default_rng(0)
    doc = {**doc, "image": Image.fromarray(rng.integers(0, 200, (64, 48, 3), dtype=np.uint8))}
    for name in BUILTIN_NAMES:
        (image,) = getattr(utils, f"doc_to_visual_{name}")(doc)
        expected = INTERVENTIONS[name].function(doc["image"])
        assert image.mode == "RGB" and np.array_equal(np.asarray(image), np.asarray(expected))
        assert not np.array_equal(np.asarray(image), np.asarray(doc["image"])), name
    # The vanilla task's hooks are unchanged: the published image, no intervention fields.
    assert utils.METRIC in utils.process_results(doc, ["A"])
    assert utils.INTERVENTION_KEY not in utils.process_results(doc, ["A"])[utils.METRIC]


def test_a_task_copy_carries_the_intervention_tasks_reading_its_dataset(
    published: Path, tmp_path: Path
) -> None:
    from mmspubench.dataset_builder.load import built_folder_for

    built = built_folder_for(published / "published")
    task = tmp_path / "task"
    assert main(["integrations", "lmms-eval", "--dataset", str(built), "--out", str(task)]) == 0
    assert sorted(p.name for p in task.iterdir()) == sorted(TASK_FILES)
    for name in INTERVENTION_TASKS:
        assert _config(f"{name}.yaml", task)["dataset_path"] == str(built.resolve())


def test_ingest_refuses_the_samples_of_an_intervention_task(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.load import load_benchmark

    utils, lines = _utils(), []
    for number, row in enumerate(load_benchmark(hub.REPO_ID)):
        metrics = utils.process_results_grayscale(dict(row), ["A"])
        metrics[utils.METRIC]["harness_version"] = "0.7.3"  # as inside lmms-eval (none installed here)
        lines.append(json.dumps({"doc_id": number, "target": utils.doc_to_target(dict(row)), **metrics}))
    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    out = tmp_path / "run"
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(out), "--dataset", hub.REPO_ID]
    assert main([*argv, "--model", "org/model"]) == 2
    err = capsys.readouterr().err.strip()
    assert "field 'intervention'" in err and "'grayscale'" in err and "\n" not in err and not out.exists()


@pytest.mark.slow
def test_lmms_eval_task_manager_loads_the_intervention_tasks_and_gives_evals_figures(
    published: Path, tmp_path: Path
) -> None:
    import os
    import subprocess

    from mmspubench.dataset_builder.load import built_folder_for

    from tests.integrations.test_lmms_eval import DRIVER, LMMS_ENV

    python = os.environ.get(LMMS_ENV)
    if not python:
        pytest.skip(f"${LMMS_ENV} is not set (build the environment with .ci/lmms-venv.sh DIR)")
    built = built_folder_for(published / "published")
    run = tmp_path / "eval"
    argv = ["eval", "--dataset", str(built), "--out", str(run), "--no-progress", "--answer-mode", "generate"]
    assert (
        main([*argv, "--metrics", "accuracy,interventions", "--interventions", ",".join(BUILTIN_NAMES)]) == 0
    )
    ours = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    answers = {
        f"mm_spubench_{n}": {
            s["id"]: a["raw_output"] for s in ours for a in s["interventions"] if a["name"] == n
        }
        for n in BUILTIN_NAMES
    }
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    task = tmp_path / "task"
    assert main(["integrations", "lmms-eval", "--dataset", str(built), "--out", str(task)]) == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    command = [python, str(DRIVER), str(task), str(tmp_path / "answers.json"), "mm_spubench_interventions"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(got) == sorted(INTERVENTION_TASKS)
    by_intervention = json.loads((run / "results.json").read_text())["interventions"]["by_intervention"]
    for name in BUILTIN_NAMES:
        task_got = got[f"mm_spubench_{name}"]
        for sample in ours:
            (answer,) = [a for a in sample["interventions"] if a["name"] == name]
            assert task_got["digests"][sample["id"]] == [answer["digest"]]  # lmms-eval shows eval's pixels
            record = task_got["records"][sample["id"]]
            assert (record["prediction"], record["correct"]) == (answer["prediction"], answer["correct"])
        assert task_got["figures"]["mm_spubench_acc"] == by_intervention[name]["accuracy"]["overall"]
