"""The Python API (``mmspubench.evaluate``), the generated parser, and the recorded scorer."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import mmspubench
import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import config
from mmspubench.eval.backends.transformers import fast_scoring

from tests.eval.families.registry import family_dir
from tests.eval.tiny_models import FAMILIES, tiny_model_dir


@pytest.mark.parametrize(
    ("family", "scorer", "used", "reason"),
    [
        ("paligemma", "fast", "plain", fast_scoring.FALLBACKS["paligemma"]),
        ("llava", "fast", "fast", None),
        ("llava", "plain", "plain", None),
    ],
)
def test_results_record_the_scorer_that_ran(
    family: str, scorer: str, used: str, reason: str | None, session_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    root = session_cache / "families"
    root.mkdir(exist_ok=True)
    model = str(tiny_model_dir(family, session_cache) if family in FAMILIES else family_dir(family, root))
    results = mmspubench.evaluate(
        model=model, out=out, limit=2, metrics="cgla", scorer=scorer, progress=False
    )
    assert results is not None
    on_disk = json.loads((out / "results.json").read_text())
    for section in (results["model"], on_disk["model"]):
        assert section["scorer_used"] == used
        assert section["scorer_fallback_reason"] == reason
    assert on_disk["config"]["scorer"] == scorer  # what was asked for stays in the config


def test_evaluate_without_out_returns_results_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    results = mmspubench.evaluate(limit=2, metrics=("accuracy",), progress=False)
    assert results is not None and results["accuracy"]["n"] == 2 and results.get("cgla") is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"speed": 3}, "unknown option(s) speed"),
        ({"answer_mode": "guess"}, "--answer-mode 'guess'"),
        ({"dtype": "float64"}, "--dtype 'float64': unknown"),
        ({"metrics": "accuracy,speed"}, "--metrics"),
        ({"limit": 0}, "--limit must be a positive"),
        ({"batch_size": 0}, "--batch-size must be an integer from 1"),
    ],
)
def test_evaluate_checks_options_before_anything_runs(options: dict[str, object], message: str) -> None:
    with pytest.raises(MMSpuBenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mmspubench.evaluate(**options)


def test_parser_is_generated_from_the_config_fields() -> None:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    defaults = config.from_args(parser.parse_args([]))
    assert defaults == config.RunConfig()
    flags = {a.dest: a for a in parser._actions}
    for f in dataclasses.fields(config.RunConfig):
        if f.metadata["cli"]:
            assert f.name in flags, f.name
            assert flags[f.name].help == config.help_with_default(f)
            assert "default" in str(flags[f.name].help) and f.metadata["help"] in str(flags[f.name].help)
    assert tuple(flags["answer_mode"].choices or ()) == config.ANSWER_MODES
    parsed = config.from_args(parser.parse_args(["--metrics", "cgla", "--no-progress", "--limit", "3"]))
    assert (parsed.metrics, parsed.progress, parsed.limit) == (("cgla",), False, 3)


def test_recorded_options_round_trip_and_identity_leaves_out_speed_options() -> None:
    run = config.RunConfig(model="m", dataset="d", limit=5, prompts={"version": "1"})
    assert config.RunConfig.from_json(json.loads(json.dumps(run.to_json()))) == run
    # the engine too: its figures equal the transformers ones (tests/eval/test_vllm_equality.py), and
    # a resumed run on another engine is refused by the model section (adapter) anyway
    # the asked-for dataset revision too: the dataset section records the commit it resolved to
    # the prompt variants at ``standard`` too: they join the identity only when set, so runs made
    # before variants existed keep their identity (tests/eval/test_prompt_variants.py)
    # the fast path's check too: it stops a run, it never changes a figure
    left_out = {"batch_size", "device", "scorer", "scorer_check", "backend", "dataset_revision"}
    left_out |= {"prompt_variant", "cgla_prompt_variant"}
    assert set(run.to_json()) - set(run.identity()) == left_out
    assert not {"out", "progress", "trust_remote_code"} & set(run.to_json())
    engine = {"tensor_parallel_size", "engine_args", "base_url", "api_key_env", "max_concurrency"}
    assert not engine & set(run.to_json())  # in results.json's backend section instead


def test_a_field_added_later_reads_older_results_with_its_default() -> None:
    # ``backend`` was added after the first release: older results files lack it
    old = {k: v for k, v in config.RunConfig(model="m", dataset="d").to_json().items() if k != "backend"}
    assert config.RunConfig.from_json(old) == config.RunConfig(model="m", dataset="d")
    assert config.RunConfig.from_json({**old, "backend": "vllm"}) == config.RunConfig(
        model="m", dataset="d", backend="vllm"
    )
    with pytest.raises(KeyError):  # a first-release option stays required
        config.RunConfig.from_json({k: v for k, v in old.items() if k != "seed"})
