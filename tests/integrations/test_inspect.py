"""The Inspect task and provider on the bundled model, mockllm, the `inspect` command, and ingest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval import metrics, prompts

from tests.dataset_builder import hub_fixtures as hub

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

TASK = "mmspubench/mm_spubench"
ARGS = {"dataset": hub.REPO_ID, "revision": hub.COMMIT}


def _output(text: str) -> ModelOutput:
    """A mockllm reply ``text``, with a token usage."""
    output = ModelOutput.from_content("mockllm", text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def _always(text: str) -> Any:
    """mockllm answering ``text`` to every request."""
    return get_model("mockllm/model", custom_outputs=lambda *_: _output(text))


def _run(model: Any, log_dir: Path) -> EvalLog:
    logs = inspect_eval(TASK, model=model, task_args=ARGS, display="none", log_dir=str(log_dir))
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0]


@pytest.fixture(scope="module")
def provider_log(published: Path, tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """One Inspect run of the bundled model through our provider."""
    return _run("mmspubench/bundled", tmp_path_factory.mktemp("logs"))


@pytest.fixture(scope="module")
def eval_run(published: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mmspubench eval --answer-mode generate` of the bundled model on the same split."""
    out = tmp_path_factory.mktemp("eval") / "run"
    argv = ["eval", "--dataset", hub.REPO_ID, "--out", str(out), "--no-progress"]
    assert main([*argv, "--metrics", "accuracy", "--answer-mode", "generate"]) == 0
    return out


def _samples(run: Path) -> dict[str, dict[str, Any]]:
    lines = (run / "samples.jsonl").read_text().splitlines()
    return {s["id"]: s for s in map(json.loads, lines)}


def _figures(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {k: m.value for score in log.results.scores for k, m in score.metrics.items()}


def _ours(samples: list[tuple[tuple[str, ...], bool]]) -> dict[str, Any]:
    scored = [metrics.Scored(types, 1.0 if ok else 0.0) for types, ok in samples]
    return metrics.accuracy_summary(scored, 0, 0)


def _check_figures(log: EvalLog, ours: dict[str, Any]) -> None:
    got = _figures(log)
    expected = {"accuracy": ours["overall"] / 100, "overall": ours["overall"], "average": ours["average"]}
    expected.update({k: v for k, v in ours["by_type"].items() if v is not None})
    assert got == pytest.approx(expected, abs=1e-12)


def test_provider_answers_equal_mmspubench_eval_item_by_item(provider_log: EvalLog, eval_run: Path) -> None:
    ours = _samples(eval_run)
    assert provider_log.samples is not None
    assert [str(s.id) for s in provider_log.samples] == list(ours)  # sample ids are item ids, in order
    for sample in provider_log.samples:
        mine = ours[str(sample.id)]
        assert sample.output.completion == mine["raw_output"], sample.id
        assert (sample.scores or {})["choice"].value == ("C" if mine["correct"] else "I")
    results = json.loads((eval_run / "results.json").read_text())
    _check_figures(provider_log, results["accuracy"])


def test_mockllm_gets_our_prompt_and_its_figures_are_ours(published: Path, tmp_path: Path) -> None:
    from mmspubench.integrations.items import load_split

    split = {s.item.id: s for s in load_split(hub.REPO_ID, hub.COMMIT).items}
    replies = ["B", "(A)", "the answer is C.", "no idea", "A. " + "x", "D"]
    seen: list[str] = []

    def reply(messages: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        system, user = messages
        assert system.text == prompts.SYSTEM and user.content[0].type == "image"
        seen.append(user.text)
        return _output(replies[len(seen) % len(replies)])

    log = _run(get_model("mockllm/model", custom_outputs=reply), tmp_path)
    assert sorted(seen) == sorted(s.user_text for s in split.values())
    assert log.samples is not None
    from mmspubench.eval.replies.parse import parse_answer

    pairs = []
    for sample in log.samples:
        item = split[str(sample.id)].item
        correct = parse_answer(sample.output.completion, item.options) == item.answer
        assert (sample.scores or {})["choice"].value == ("C" if correct else "I")
        pairs.append((item.spurious_types, correct))
    _check_figures(log, _ours(pairs))


def test_a_run_cut_by_inspects_own_limit_ingests_as_a_partial_run(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _always("I cannot tell.")
    logs = inspect_eval(TASK, model=model, task_args=ARGS, limit=4, display="none", log_dir=str(tmp_path))
    assert logs[0].status == "success", logs[0].error
    assert _ingest(Path(logs[0].location), tmp_path / "run") == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dataset"]["n"] == 4 and results["config"]["limit"] == 4
    assert results["accuracy"]["unparsed"] == 4  # the reply names no option
    assert _submit(tmp_path / "run", tmp_path / "pr") == 2  # only full runs are submitted


def _ingest(log_path: Path, out: Path) -> int:
    return main(["ingest", "inspect", str(log_path), "--out", str(out)])


def _submit(run: Path, out: Path) -> int:
    argv = ["submit", str(run / "results.json"), "--model-repo", "org/model", "--dry-run", str(out)]
    return main([*argv, "--dataset-revision", hub.COMMIT])


def test_ingested_log_reports_and_submits(
    provider_log: EvalLog, eval_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert _ingest(Path(provider_log.location), run) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["harness"]["name"] == "inspect_ai" and results["harness"]["version"]
    assert results["accuracy_only"] and results["cgla"] is None
    assert results["accuracy"] == json.loads((eval_run / "results.json").read_text())["accuracy"]
    assert {k: (s["prediction"], s["raw_output"]) for k, s in _samples(run).items()} == {
        k: (s["prediction"], s["raw_output"]) for k, s in _samples(eval_run).items()
    }
    assert main(["report", str(run / "results.json")]) == 0
    from mmspubench.space.leaderboard import load_entries

    (entry,) = load_entries(tmp_path)
    # mmspubench/bundled is the bundled model's folder, the id `mmspubench eval` records for it
    assert entry.model_id == json.loads((eval_run / "results.json").read_text())["model"]["id"]
    assert results["harness"]["model"] == "mmspubench/bundled"
    assert _submit(run, tmp_path / "pr") == 0
    assert (tmp_path / "pr").is_dir()


def _tampered(log: EvalLog, path: Path, how: str) -> Path:
    copy = read_eval_log(log.location)
    assert copy.samples is not None and copy.results is not None
    sample = copy.samples[0]
    if how == "score":
        score = (sample.scores or {})["choice"]
        score.value = "I" if score.value == "C" else "C"
    elif how == "output":
        sample.output.completion = str(sample.target)  # now reads as correct
        sample.output.choices[0].message.content = str(sample.target)
    elif how == "target":
        sample.target = "D" if sample.target != "D" else "A"
    elif how == "system":
        sample.input[0].content = "Judge by the background."  # type: ignore[union-attr]
    elif how == "nan":
        copy.results.scores[0].metrics["accuracy"].value = float("nan")
    else:
        copy.results.scores[0].metrics["accuracy"].value += 0.25
    write_eval_log(copy, str(path))
    return path


@pytest.mark.parametrize("how", ["score", "output", "target", "figure", "nan", "system"])
def test_a_tampered_log_is_refused(
    provider_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    path = _tampered(provider_log, tmp_path / "log.eval", how)
    capsys.readouterr()
    assert _ingest(path, tmp_path / "run") == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("content", [b"not a log", b"PK\x03\x04broken zip"])
def test_a_file_that_is_not_an_inspect_log_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "x.eval"
    path.write_bytes(content)
    assert _ingest(path, tmp_path / "run") == 2
    err = capsys.readouterr().err.strip()
    assert "x.eval" in err and "\n" not in err and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_inspect_command_line_runs_the_task_from_any_folder(published: Path, tmp_path: Path) -> None:
    release = published / "published"
    env = {**os.environ, "MMSPUBENCH_CACHE": str(published / "mmspubench-cache"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "inspect_ai", "eval", TASK, "--model", "mmspubench/bundled"]
    command += ["-T", f"dataset={release}", "-T", "limit=3", "--log-dir", str(tmp_path / "logs")]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.samples is not None and len(log.samples) == 3
    assert main(["ingest", "inspect", str(log_file), "--out", str(tmp_path / "run")]) == 0


def test_a_log_of_another_prompt_variant_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _always("A")
    args = {**ARGS, "prompt_variant": "core-focus"}
    logs = inspect_eval(TASK, model=model, task_args=args, limit=2, display="none", log_dir=str(tmp_path))
    assert logs[0].status == "success", logs[0].error
    capsys.readouterr()
    assert _ingest(Path(logs[0].location), tmp_path / "run") == 2
    err = capsys.readouterr().err.strip()
    assert "prompt_variant='core-focus'" in err and "\n" not in err
    assert not (tmp_path / "run").exists()
