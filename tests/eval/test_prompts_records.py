from __future__ import annotations

import json

import pytest
from mmspubench.eval import prompts
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import Condition, SampleResult


def test_cgla_prompts_share_everything_before_the_attribute() -> None:
    a = prompts.cgla_prompt("striped fur")
    b = prompts.cgla_prompt("snowy background")
    assert a.system == b.system
    assert a.assistant_prefix == b.assistant_prefix
    # The attribute comes last in the user turn, so the fixed instruction is a common prefix.
    fixed = prompts.CGLA_USER.split("{attribute}")[0]
    assert a.user_text == fixed + "striped fur"
    assert b.user_text == fixed + "snowy background"
    assert prompts.CGLA_USER.endswith("{attribute}")


def test_continuations_carry_the_leading_space() -> None:
    assert prompts.cgla_continuation("tabby cat") == " tabby cat"
    assert prompts.letter_continuations() == (" A", " B", " C", " D")
    assert not prompts.CGLA_ASSISTANT_PREFIX.endswith(" ")
    assert not prompts.MCQ_LOGPROB_PREFIX.endswith(" ")


def test_mcq_prompt_layout() -> None:
    p = prompts.mcq_prompt("What is it?", ["cat", "dog", "cow", "pig"], "generate")
    assert p.user_text == (
        "What is it?\nA. cat\nB. dog\nC. cow\nD. pig\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert p.assistant_prefix == ""
    assert prompts.mcq_prompt("Q", ["a", "b", "c", "d"], "logprob").assistant_prefix == "Answer:"
    with pytest.raises(ValueError):
        prompts.mcq_prompt("Q", ["a", "b", "c"], "generate")
    with pytest.raises(ValueError):
        prompts.mcq_prompt("Q", ["a", "b", "c", "d"], "vote")


def test_prompt_spec_is_json_and_versioned() -> None:
    spec = prompts.prompt_spec()
    assert spec["version"] == prompts.PROMPT_VERSION
    assert json.loads(json.dumps(spec)) == spec
    assert spec["cgla"]["user"] == prompts.CGLA_USER


def _sample() -> SampleResult:
    return SampleResult(
        id="000003",
        types=("background", "shape"),
        answer="B",
        prediction=None,
        correct=False,
        raw_output="I cannot tell",
        option_scores=None,
        class_name="cat",
        conditions=(
            Condition("whiskers", "core", "<p1>", " cat", -1.25),
            Condition("sofa", "spurious", "<p2>", " cat", -0.1 + -0.2),
        ),
        cgla_min=-0.95,
        cgla_acc=False,
    )


def test_sample_result_round_trips_through_json_exactly() -> None:
    sample = _sample()
    line = json.dumps(sample.to_json())
    back = SampleResult.from_json(json.loads(line))
    assert back == sample
    assert back.conditions[1].cgl == -0.1 + -0.2  # float repr round-trips bit for bit
    assert back.unparsed
    fields = set(sample.to_json())
    assert {
        "id",
        "types",
        "answer",
        "prediction",
        "correct",
        "raw_output",
        "class_name",
        "conditions",
        "cgla_min",
        "cgla_acc",
    } <= fields


@pytest.mark.parametrize(("key", "value"), [("correct", "yes"), ("cgla_acc", 1)])
def test_sample_result_rejects_non_boolean_flags(key: str, value: object) -> None:
    obj = _sample().to_json()
    obj[key] = value
    with pytest.raises(TypeError):
        SampleResult.from_json(obj)


def test_condition_rejects_unknown_kind() -> None:
    obj = _sample().conditions[0].to_json()
    obj["kind"] = "neutral"
    with pytest.raises(ValueError):
        Condition.from_json(obj)


def test_run_config_round_trip_and_identity() -> None:
    config = RunConfig(model="m", dataset="d", limit=5, prompts=prompts.prompt_spec())
    assert RunConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    identity = config.identity()
    assert "batch_size" not in identity and "device" not in identity and "scorer" not in identity
    assert identity["limit"] == 5 and identity["core_reduction"] == "best"
