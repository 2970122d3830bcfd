"""``--thinking``: what a chat template does, the modes a run may ask, how prompts are rendered
(answered prompts with the asked mode, scored ones with thinking off and the empty reasoning block),
what results.json records, the run identity, the default token budget and the refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import asking, prompts
from mmspubench.eval.checkpoint import thinking
from mmspubench.eval.cli import main
from mmspubench.eval.config import RunConfig, with_options

from tests.eval.families.common import chatml_template
from tests.eval.thinking.models import ALWAYS, EMPTY_BLOCK, SWITCHABLE, build_thinking_model

PLAIN = chatml_template("<image>")


def _template(text: str, name: str = "org/model") -> thinking.TemplateThinking:
    return thinking.of_template(thinking.template_renderer(text), text, name)


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        (SWITCHABLE, "Qwen/Qwen3-8B", thinking.TemplateThinking(True, True, EMPTY_BLOCK)),
        (ALWAYS, "Qwen/Qwen3-VL-8B-Thinking", thinking.TemplateThinking(False, True)),
        (PLAIN, "llava-hf/llava-1.5-7b-hf", thinking.TemplateThinking(False, False)),
        # Kimi-VL-A3B-Thinking's template opens no block: its name says it thinks
        (PLAIN, "moonshotai/Kimi-VL-A3B-Thinking-2506", thinking.TemplateThinking(False, True)),
        (PLAIN, "/models/thinking/llava", thinking.TemplateThinking(False, False)),  # the last part only
    ],
)
def test_what_a_template_does_is_read_from_its_rendering(
    text: str, name: str, expected: thinking.TemplateThinking
) -> None:
    assert _template(text, name) == expected


def test_a_template_that_thinks_only_when_asked_defaults_to_off() -> None:
    text = SWITCHABLE.replace(
        "enable_thinking is defined and enable_thinking is false", "not enable_thinking"
    )
    assert _template(text) == thinking.TemplateThinking(True, False, EMPTY_BLOCK)


def test_the_modes_resolve_to_the_template_keyword_and_scored_prompts_think_off() -> None:
    switch = _template(SWITCHABLE)
    off = {"enable_thinking": False}
    assert thinking.resolve("auto", switch, "m", "qwen3") == thinking.ThinkingSetting(
        "on", "model default", {}, off
    )
    on = thinking.resolve("on", switch, "m", "qwen3")
    assert on == thinking.ThinkingSetting(
        "on", "chat_template_kwargs:enable_thinking", {"enable_thinking": True}, off
    )
    assert on.record() == {
        "mode": "on",
        "set_by": "chat_template_kwargs:enable_thinking",
        "scored_rendering": "enable_thinking=false",
    }
    assert on.kwargs_for(scored=True) == off and on.kwargs_for(scored=False) == {"enable_thinking": True}
    assert thinking.resolve("off", switch, "m", "qwen3").answered == off
    always = thinking.resolve("auto", _template(ALWAYS), "m", "qwen3_vl")
    assert always.record() == {"mode": "on", "set_by": "model default", "scored_rendering": "none"}
    assert thinking.resolve("auto", _template(PLAIN), "m", "llava") is thinking.NOT_THINKING
    assert not thinking.NOT_THINKING.recorded


@pytest.mark.parametrize(
    ("asked", "text", "line"),
    [
        (
            "off",
            ALWAYS,
            "--thinking off: Qwen/Qwen3-VL-8B-Thinking (family qwen3_vl) always thinks and its chat "
            "template has no enable_thinking switch; run with --thinking auto",
        ),
        (
            "on",
            PLAIN,
            "--thinking on: Qwen/Qwen3-VL-8B-Thinking (family qwen3_vl) does not think and its chat "
            "template has no enable_thinking switch; run with --thinking auto",
        ),
    ],
)
def test_a_mode_the_model_cannot_give_is_one_line_naming_its_family(asked: str, text: str, line: str) -> None:
    found = thinking.of_template(thinking.template_renderer(text), text, "any")
    with pytest.raises(MMSpuBenchError) as err:
        thinking.resolve(asked, found, "Qwen/Qwen3-VL-8B-Thinking", "qwen3_vl")
    assert str(err.value) == line


def test_the_option_is_checked_once_with_the_config_and_recorded_only_when_set() -> None:
    with pytest.raises(
        MMSpuBenchError, match=r"^--thinking 'maybe': unknown; expected one of auto, on, off$"
    ):
        with_options(None, {"thinking": "maybe"})
    auto = with_options(None, {})
    assert "thinking" not in auto.to_json() and "thinking" not in auto.identity()
    on = with_options(None, {"thinking": "on"})
    assert on.to_json()["thinking"] == "on" and on.identity()["thinking"] == "on"
    # a run written before the option existed reads as auto
    assert RunConfig.from_json(auto.to_json()).thinking == "auto"
    assert RunConfig.from_json(on.to_json()).thinking == "on"


def test_the_default_budget_is_the_thinking_one_when_the_model_thinks() -> None:
    config = with_options(None, {})
    assert asking.max_new_tokens(config) == 16
    assert asking.max_new_tokens(config, thinks=True) == thinking.THINKING_MAX_NEW_TOKENS == 8192
    assert asking.max_new_tokens(with_options(None, {"thinking": "on"})) == 8192
    assert asking.max_new_tokens(with_options(None, {"thinking": "on", "max_new_tokens": 32})) == 32
    assert asking.max_new_tokens(with_options(None, {"prompt_variant": "reasoning"})) == 512


@pytest.fixture(scope="module")
def switchable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_thinking_model(tmp_path_factory.mktemp("qwen3") / "model", SWITCHABLE)


@pytest.fixture(scope="module")
def always(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_thinking_model(tmp_path_factory.mktemp("qwen3-vl") / "model", ALWAYS)


def test_the_budget_of_a_model_that_thinks_by_default_is_known_before_it_loads(switchable: Path) -> None:
    config = with_options(None, {"model": str(switchable)})
    assert thinking.thinks_before_loading(config)
    assert not thinking.thinks_before_loading(dataclasses.replace(config, thinking="off"))
    assert not thinking.thinks_before_loading(RunConfig())


def test_answered_prompts_take_the_mode_and_scored_ones_the_empty_block(switchable: Path) -> None:
    from mmspubench.eval.backends.transformers.loading import load_checked

    config = with_options(None, {"model": str(switchable), "thinking": "on", "batch_size": 2})
    model = load_checked(config, "cpu")
    answered = model.render(prompts.mcq_prompt("q?", ["a", "b", "c", "d"], "generate"))
    assert answered.endswith("<|im_start|>assistant\n")
    cgla = model.render(prompts.cgla_prompt("red"))
    assert cgla.endswith("<|im_start|>assistant\n" + EMPTY_BLOCK + prompts.CGLA_ASSISTANT_PREFIX)
    logprob = model.render(prompts.mcq_prompt("q?", ["a", "b", "c", "d"], "logprob"))
    assert logprob.endswith("<|im_start|>assistant\n" + EMPTY_BLOCK + prompts.MCQ_LOGPROB_PREFIX)
    off = load_checked(dataclasses.replace(config, thinking="off"), "cpu")
    assert off.render(prompts.mcq_prompt("q?", ["a", "b", "c", "d"], "generate")).endswith(EMPTY_BLOCK)


def _eval(model: Path, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--model", str(model), "--limit", "2", "--batch-size", "2", "--no-progress",
        "--out", str(out), "--max-new-tokens", "3", *more,
    ]  # fmt: skip


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_thinking_run_end_to_end_records_its_mode(mode: str, switchable: Path, tmp_path: Path) -> None:
    out = tmp_path / mode
    assert main(_eval(switchable, out, "--thinking", mode)) == 0
    results = _results(out)
    assert results["config"]["thinking"] == mode
    assert results["config"]["max_new_tokens"] == 3
    assert results["model"]["thinking"] == {
        "mode": mode,
        "set_by": "chat_template_kwargs:enable_thinking",
        "scored_rendering": "enable_thinking=false",
    }
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["config"]["thinking"] == mode and "thinking" not in manifest["model"]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert all(
        c["prompt"].endswith(EMPTY_BLOCK + prompts.CGLA_ASSISTANT_PREFIX) for c in samples[0]["conditions"]
    )


def test_auto_records_the_model_default_and_a_resume_with_another_mode_is_refused(
    switchable: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(_eval(switchable, out, "--metrics", "accuracy")) == 0
    results = _results(out)
    assert "thinking" not in results["config"]
    assert results["model"]["thinking"]["set_by"] == "model default"
    assert results["model"]["thinking"]["mode"] == "on"
    capsys.readouterr()
    assert main(_eval(switchable, out, "--metrics", "accuracy", "--thinking", "off")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "thinking" in err, err
    assert main(_eval(switchable, out, "--metrics", "accuracy")) == 0  # the same mode resumes


def test_scoring_under_a_model_that_cannot_stop_thinking_is_refused(
    always: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_eval(always, tmp_path / "cgla")) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"mmspubench eval: error: --metrics cgla: {always} (family qwen3_vl) always thinks and its chat "
        "template cannot switch thinking off, so no scored prompt is one the model writes itself; run "
        "with --answer-mode generate --metrics accuracy"
    )
    assert main(_eval(always, tmp_path / "logprob", "--metrics", "accuracy", "--answer-mode", "logprob")) == 2
    assert capsys.readouterr().err.startswith("mmspubench eval: error: --answer-mode logprob: ")
    assert main(_eval(always, tmp_path / "off", "--metrics", "accuracy", "--thinking", "off")) == 2
    assert "always thinks and its chat template has no enable_thinking switch" in capsys.readouterr().err
    out = tmp_path / "generate"
    assert main(_eval(always, out, "--metrics", "accuracy")) == 0
    assert _results(out)["model"]["thinking"] == {
        "mode": "on",
        "set_by": "model default",
        "scored_rendering": "none",
    }


def test_a_run_written_before_the_option_resumes_under_auto(switchable: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(_eval(switchable, out, "--metrics", "accuracy")) == 0
    results = _results(out)  # as a run written before thinking was recorded: no key anywhere
    for section in ("model", "environment"):
        del results[section]["thinking"]
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    assert "thinking" not in (out / "run.json").read_text()
    assert main(_eval(switchable, out, "--metrics", "accuracy")) == 0  # finished: left as it was
    assert _results(out) == results
    lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
    (out / "samples.jsonl").write_text(lines[0], encoding="utf-8")  # cut after its first item
    (out / "results.json").unlink()
    assert main(_eval(switchable, out, "--metrics", "accuracy")) == 0
    resumed = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    before = [json.loads(line) for line in lines]
    assert [(r["id"], r["raw_output"], r["run"]) for r in resumed] == [
        (r["id"], r["raw_output"], r["run"]) for r in before
    ]
    assert _results(out)["model"]["thinking"]["set_by"] == "model default"
