"""SWEEP.yaml is validated in full before anything runs: one line naming the entry, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval.config import with_options
from mmspubench.sweep.argv import eval_argv, parsed_config
from mmspubench.sweep.spec import load_sweep

from tests.sweep.sweep_files import TWO_MODELS, write_sweep

SECTIONS = ("slurm", "hf_jobs")


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], **doc: Any) -> str:
    path = write_sweep(tmp_path, **doc)
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists()
    return err


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"rooot": "x"}, "unknown key 'rooot'"),
        ({"models": [{"name": "a", "model": "m", "revision": "x"}]}, "models[0]: unknown key 'revision'"),
        (
            {"models": [{**TWO_MODELS[0], "options": {"answer_mode": "guess"}}]},
            "models[0] (biased): variant 'standard': --answer-mode 'guess': unknown",
        ),
        (
            {"models": [{**TWO_MODELS[0], "options": {"batch_size": 0}}]},
            "models[0] (biased): variant 'standard': --batch-size",
        ),
        ({"models": [{**TWO_MODELS[0], "options": {"no_such": 1}}]}, "unknown option(s) no_such"),
        (
            {"models": [{**TWO_MODELS[0], "options": {"prompt_variant": "reasoning"}}]},
            "'prompt_variant' is set by the sweep",
        ),
        ({"variants": ["standard", "nope"]}, "variant 'nope': --prompt-variant 'nope': unknown"),
        ({"variants": ["standard", "standard"]}, "variants: 'standard' is listed twice"),
        ({"metrics": ["accuracy", "bogus"]}, "--metrics 'accuracy,bogus'"),
        (
            {"models": [TWO_MODELS[0], TWO_MODELS[0]]},
            "run 'biased--standard' duplicates run 'biased--standard'",
        ),
        (
            {"models": [TWO_MODELS[0], {**TWO_MODELS[0], "name": "again"}]},
            "run 'again--standard' duplicates run 'biased--standard'",
        ),
        ({"slurm": {"partition": "gpu", "gpus": 2}}, "slurm: unknown key 'gpus'"),
        ({"slurm": {"timeout_min": 0}}, "slurm: timeout_min: --timeout-min must be 1 or more"),
        ({"hf_jobs": {"flavor": "cpu-basic"}}, "hf_jobs: key 'results_repo' is required"),
        ({"root": None}, "field 'root'"),
        ({"models": []}, "models: expected a non-empty list"),
    ],
)
def test_a_bad_sweep_file_is_one_line_naming_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any], expected: str
) -> None:
    err = _refused(tmp_path, capsys, **doc)
    assert "sweep.yaml" in err and expected in err, err


def test_a_sweep_that_is_not_yaml_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("models: [unclosed\n", encoding="utf-8")
    assert main(["sweep", str(path)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_each_run_is_the_eval_command_that_makes_its_config(tmp_path: Path) -> None:
    sweep = load_sweep(write_sweep(tmp_path, metrics=["accuracy"]), SECTIONS)
    assert [r.name for r in sweep.runs] == [
        "biased--standard",
        "biased--core-focus",
        "balanced--standard",
        "balanced--core-focus",
    ]
    run = sweep.runs[1]
    assert run.folder == (tmp_path / "runs" / "biased--core-focus").absolute()
    assert run.argv[-2:] == ("--out", str(run.folder))
    assert "--prompt-variant" in run.argv and "--no-progress" in run.argv
    assert parsed_config(run.argv) == run.config
    assert run.config.metrics == ("accuracy",) and run.config.limit == 2


@pytest.mark.parametrize(
    "options",
    [
        {"trust_remote_code": True, "progress": False, "metrics": ("cgla",), "core_reduction": "mean"},
        {
            "backend": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": "none",
            "model": "m",
            "request_timeout": 2.5,
        },
        {"dataset_revision": "abc", "seed": 7, "max_new_tokens": 9, "dtype": "bfloat16", "scorer": "plain"},
    ],
)
def test_the_command_line_round_trips_through_evals_parser(options: dict[str, Any]) -> None:
    config = with_options(None, {**options, "out": "x"})
    assert parsed_config(eval_argv(config)) == config


def test_a_metric_name_passes_through_to_evals_own_check(tmp_path: Path) -> None:
    """The sweep keeps no list of metrics: what eval's --metrics accepts, a sweep accepts."""
    from mmspubench.eval.config import METRICS

    sweep = load_sweep(write_sweep(tmp_path, metrics=list(reversed(METRICS))), SECTIONS)
    assert sweep.runs[0].config.metrics == METRICS


def test_relative_model_folders_are_read_beside_the_sweep_file(tmp_path: Path) -> None:
    (tmp_path / "models" / "m").mkdir(parents=True)
    sweep = load_sweep(write_sweep(tmp_path, models=[{"model": "models/m"}]), SECTIONS)
    assert sweep.runs[0].name == "m--standard"
    assert sweep.runs[0].config.model == str((tmp_path / "models" / "m").resolve())


INTERVENED = {"metrics": ["accuracy", "interventions"], "models": TWO_MODELS[:1]}


def test_a_sweep_asks_for_interventions_with_the_metric_and_the_option(tmp_path: Path) -> None:
    options = {"limit": 2, "answer_mode": "logprob", "interventions": ["grayscale", "cf:*"]}
    sweep = load_sweep(write_sweep(tmp_path, **INTERVENED, options=options), SECTIONS)
    run = sweep.runs[0]
    assert run.config.metrics == ("accuracy", "interventions")
    assert run.config.interventions == ("grayscale", "cf:*")
    assert run.argv[run.argv.index("--interventions") + 1] == "grayscale,cf:*"
    assert parsed_config(run.argv) == run.config
    # Without the option: every built-in one, as eval's default, written out in the command.
    default = load_sweep(write_sweep(tmp_path, **INTERVENED), SECTIONS).runs[0]
    assert default.config.interventions == ("grayscale", "blur", "equalize", "noise")
    assert parsed_config(default.argv) == default.config


@pytest.mark.parametrize(
    ("interventions", "expected"),
    [
        ("grayscale,blurr", "--interventions: unknown intervention 'blurr' (did you mean blur?)"),
        (["grayscale", "grayscale"], "'grayscale' is given twice"),
        ("cf:Cue_Aligned", "'cf:Cue_Aligned': a counterfactual's name is lower-case letters"),
        (["cf:*", "cf:cue-aligned"], "cf:* already asks every counterfactual"),
        ([1], "expected a list of texts"),
        ({"grayscale": True}, "expected a list of texts"),
        ([], "option 'interventions' is empty; name some"),
        ("  ", "option 'interventions' is empty; name some"),
        (None, "option 'interventions' is empty; name some"),
        (["", ""], "option 'interventions' is empty; name some"),
    ],
)
def test_a_bad_intervention_name_of_a_sweep_is_one_line_naming_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], interventions: Any, expected: str
) -> None:
    err = _refused(tmp_path, capsys, **INTERVENED, options={"limit": 2, "interventions": interventions})
    assert "sweep.yaml: models[0] (biased)" in err and expected in err, err


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        (["accuracy"], "--interventions grayscale is used only with --metrics ...,interventions"),
        (["cgla", "interventions"], "interventions needs accuracy too"),
    ],
)
def test_interventions_without_their_metric_or_accuracy_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metrics: list[str], expected: str
) -> None:
    doc = {**INTERVENED, "metrics": metrics}
    err = _refused(tmp_path, capsys, **doc, options={"limit": 2, "interventions": "grayscale"})
    assert expected in err, err
