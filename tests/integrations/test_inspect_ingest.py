"""The offline mock provider, the Inspect task's option checks, and `ingest inspect` on edited logs:
strict JSON, NaN figures, answers over the line limit, runs that did not finish, texts from the log
through the one filter, and model names that only look like Hub ids."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder import hub_fixtures as hub

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

TASK = "mmspubench/mm_spubench"
ARGS = {"dataset": hub.REPO_ID, "revision": hub.COMMIT}
MOCK = "mmspubench-mock/A"


@pytest.fixture(scope="module")
def mock_log(published: Path, tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """A full run of the offline mock provider (it answers "A" to everything)."""
    logs = inspect_eval(
        TASK, model=MOCK, task_args=ARGS, display="none", log_dir=str(tmp_path_factory.mktemp("logs"))
    )
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def _ingest(path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["ingest", "inspect", str(path), "--out", str(out)])
    done = capsys.readouterr()
    return code, done.out.strip(), done.err.strip()


def _edited(log: EvalLog, path: Path, edit: Any) -> Path:
    copy = read_eval_log(log.location)
    edit(copy)
    write_eval_log(copy, str(path))
    return path


def test_the_mock_provider_runs_offline_and_its_run_ingests(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert mock_log.samples is not None and len(mock_log.samples) == hub.N_IMAGES
    assert {s.output.completion for s in mock_log.samples} == {"A"}
    assert all(s.output.usage is not None for s in mock_log.samples)  # no tokenizer download asked
    code, out, err = _ingest(Path(mock_log.location), tmp_path / "run", capsys)
    assert code == 0, err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    answers_a = sum(s.target == "A" for s in mock_log.samples)
    assert results["accuracy"]["overall"] == pytest.approx(100 * answers_a / hub.N_IMAGES)
    assert results["model"]["id"] == MOCK and results["model"]["hub_repo"] is None
    assert (
        results["harness"]["model"] == MOCK
        and results["harness"]["version"] == mock_log.eval.packages["inspect_ai"]
    )
    assert f"run of {MOCK}, {hub.N_IMAGES} items" in out


def test_a_normal_run_warns_of_no_empty_metric(
    published: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mmspubench.integrations.inspect.task import type_accuracy

    assert type_accuracy()([]) == {}  # Inspect asks before the first sample; no exception
    with caplog.at_level(logging.WARNING):
        logs = inspect_eval(TASK, model=MOCK, task_args=ARGS, limit=2, display="none", log_dir=str(tmp_path))
    assert logs[0].status == "success"
    assert not [r for r in caplog.records if "empty sample set" in r.getMessage()]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"max_tokens": 0}, "-T max_tokens=0: must be positive"),
        ({"limit": "abc"}, "-T limit='abc': expected an integer"),
        ({"limit": 0}, "-T limit=0: must be a positive number of items"),
        ({"revision": 1234567}, "-T revision=1234567: expected a text"),
        ({"prompt_variant": "nope"}, "-T prompt_variant='nope': expected one of standard"),
        ({"split": ""}, "-T split='': empty"),
    ],
)
def test_every_task_option_is_checked_like_evals_before_the_data_is_read(
    given: dict[str, Any], expected: str
) -> None:
    from inspect_ai._util.error import PrerequisiteError
    from mmspubench.integrations.inspect.task import mm_spubench

    with pytest.raises(MMSpuBenchError) as caught:
        mm_spubench(dataset="/nonexistent/folder", **given)
    assert isinstance(caught.value, PrerequisiteError)  # Inspect prints its message alone
    assert str(caught.value).startswith(expected) and "\n" not in str(caught.value)


def test_the_provider_loads_no_weights_before_its_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    import mmspubench
    from mmspubench.integrations.inspect import provider as inspect_provider

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("weights loaded before any request")

    monkeypatch.setattr(mmspubench, "load_model", refuse)
    monkeypatch.setattr(inspect_provider, "_LOADED", {})
    api = inspect_provider.MMSpuBenchModelAPI("bundled")
    assert api.key.folder.endswith("tiny-llava-biased")
    with pytest.raises(AssertionError, match="before any request"):
        api.vlm  # noqa: B018  (the first request loads)


@pytest.mark.parametrize("figure", ["accuracy", "overall"])
def test_a_figure_edited_to_nan_is_refused(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str], figure: str
) -> None:
    def edit(log: EvalLog) -> None:
        assert log.results is not None
        for score in log.results.scores:
            if figure in score.metrics:
                score.metrics[figure].value = math.nan

    code, _, err = _ingest(_edited(mock_log, tmp_path / "log.eval", edit), tmp_path / "run", capsys)
    assert code == 2 and f"figure {figure!r}: recorded nan" in err and "\n" not in err
    assert not (tmp_path / "run").exists()


def test_a_key_given_twice_in_a_json_log_is_refused(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _edited(mock_log, tmp_path / "log.json", lambda log: None)
    text = path.read_text()
    assert text.count('"completion": "A"') >= 1
    path.write_text(text.replace('"completion": "A"', '"completion": "B", "completion": "A"', 1))
    assert read_eval_log(str(path)).status == "success"  # Inspect's reader takes the last
    code, _, err = _ingest(path, tmp_path / "run", capsys)
    assert code == 2 and "'completion' appears twice" in err and "\n" not in err
    assert not (tmp_path / "run").exists()


def test_a_key_given_twice_in_a_part_of_an_eval_log_is_refused(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import zipfile

    path = tmp_path / "dup.eval"
    zstd: int = getattr(zipfile, "ZIP_ZSTANDARD")  # noqa: B009  (added by inspect_ai's import)
    with zipfile.ZipFile(mock_log.location) as source, zipfile.ZipFile(path, "w", compression=zstd) as copy:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.startswith("samples/"):
                data = data.replace(b'"target":', b'"target":"Z","target":', 1)
            copy.writestr(info.filename, data)
    assert read_eval_log(str(path)).status == "success"  # Inspect's reader takes the last
    code, _, err = _ingest(path, tmp_path / "run", capsys)
    assert code == 2 and "key 'target' appears twice" in err and "part 'samples/" in err
    assert not (tmp_path / "run").exists()


def test_a_run_that_did_not_finish_says_what_happened(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*args: Any) -> ModelOutput:
        raise RuntimeError("the server went away")

    model = get_model("mockllm/model", custom_outputs=fail)
    logs = inspect_eval(
        TASK, model=model, task_args=ARGS, limit=3, display="none", log_dir=str(tmp_path / "l")
    )
    assert logs[0].status == "error"
    code, _, err = _ingest(Path(logs[0].location), tmp_path / "run", capsys)
    assert code == 2 and "\n" not in err
    assert "did not finish (status 'error'): 0 of 3 samples scored, 3 failed" in err
    assert "the server went away" in err and "with 3 samples" not in err


def test_an_answer_over_the_8_mib_line_limit_is_refused_at_ingest(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = "A" + " x" * (9 * 2**20 // 2)

    def reply(*args: Any) -> ModelOutput:
        output = ModelOutput.from_content("mockllm", big)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    model = get_model("mockllm/model", custom_outputs=reply)
    logs = inspect_eval(
        TASK, model=model, task_args=ARGS, limit=1, display="none", log_dir=str(tmp_path / "l")
    )
    assert logs[0].status == "success", logs[0].error
    code, _, err = _ingest(Path(logs[0].location), tmp_path / "run", capsys)
    assert code == 2 and "field 'raw_output'" in err and "over the limit of 8 MiB" in err
    assert not (tmp_path / "run").exists()


def test_texts_from_the_log_reach_the_terminal_filtered(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def bad_version(log: EvalLog) -> None:
        log.eval.packages["inspect_ai"] = "0.3.285\x1b]0;owned\x07\x1b[2J"

    code, out, err = _ingest(_edited(mock_log, tmp_path / "v.eval", bad_version), tmp_path / "r1", capsys)
    assert code == 2 and "is not a version" in err and "\x1b" not in err + out and "\x07" not in err

    def bad_name(log: EvalLog) -> None:
        log.eval.model = "mmspubench-mock/\x1b[2J\x1b]8;;http://x\x07A"

    code, out, err = _ingest(_edited(mock_log, tmp_path / "m.eval", bad_name), tmp_path / "r2", capsys)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "run of mmspubench-mock/" in out


@pytest.mark.parametrize("name", ["openai/gpt-4o-mini", "mockllm/model", "anthropic/claude-x"])
def test_an_inspect_api_model_is_no_hub_link_and_submit_does_not_insist_on_it(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    from mmspubench.space.leaderboard import load_entries

    def rename(log: EvalLog) -> None:
        log.eval.model = name

    runs = tmp_path / "runs"
    code, _, err = _ingest(_edited(mock_log, tmp_path / "n.eval", rename), runs / "run", capsys)
    assert code == 0, err
    results = json.loads((runs / "run" / "results.json").read_text())
    assert results["model"]["id"] == name and results["model"]["hub_repo"] is None
    (entry,) = load_entries(runs)
    assert "](" not in entry.row["Model"] and "huggingface.co" not in entry.row["Model"]
    argv = ["submit", str(runs / "run" / "results.json"), "--model-repo", "org/model"]
    assert main([*argv, "--dry-run", str(tmp_path / "pr"), "--dataset-revision", hub.COMMIT]) == 0


def test_a_weights_provider_name_keeps_its_hub_link(
    mock_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.space.leaderboard import load_entries

    def rename(log: EvalLog) -> None:
        log.eval.model = "hf/org/some-vlm"

    runs = tmp_path / "runs"
    assert _ingest(_edited(mock_log, tmp_path / "n.eval", rename), runs / "run", capsys)[0] == 0
    results = json.loads((runs / "run" / "results.json").read_text())
    assert results["model"]["id"] == "org/some-vlm" and results["model"]["hub_repo"] == "org/some-vlm"
    assert results["harness"]["model"] == "hf/org/some-vlm"
    (entry,) = load_entries(runs)
    assert entry.row["Model"] == "[org/some-vlm](https://huggingface.co/org/some-vlm)"
    argv = ["submit", str(runs / "run" / "results.json"), "--model-repo", "org/other"]
    assert main([*argv, "--dry-run", str(tmp_path / "pr"), "--dataset-revision", hub.COMMIT]) == 2
