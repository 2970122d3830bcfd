"""``--backend openai`` against reasoning APIs (stand-in servers on 127.0.0.1): the token budget's
parameter, a model that takes only its default temperature, ``--reasoning-effort``, the reasoning,
finish reason and token counts of each reply, and a server's refusal of a parameter as one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("openai", reason="the api extra (openai) is not installed")

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.openai import Options
from mmspubench.eval.backends.openai.client import OpenAIModel, ServerFeatures, describe_error
from mmspubench.eval.backends.openai.sampling import DEFAULT_ONLY, Sampling, adjusted, refusal_line
from mmspubench.eval.backends.openai.server_answers import count, reasoning_count
from mmspubench.eval.cli import main
from mmspubench.eval.protocol import ChatPrompt, Generation, ModelInfo

from tests.eval.standin_server import REASONING_MODEL, REFUSALS, StandInServer

KEY = "sk-test-reasoning-0123456789"
THOUGHT = REASONING_MODEL["reasoning"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPU_TEST_KEY", KEY)


def _eval(server: StandInServer, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model",
        "--limit", "4", "--out", str(out), "--no-progress", "--api-key-env", "MMSPU_TEST_KEY",
        "--metrics", "accuracy", *more,
    ]  # fmt: skip


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())


def _bodies(server: StandInServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.chat_requests()]


def test_a_reasoning_model_runs_with_max_completion_tokens_and_its_default_temperature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with StandInServer(answer="B", **REASONING_MODEL) as server:
        assert main(_eval(server, out, "--max-new-tokens", "64")) == 0
    bodies = _bodies(server)
    # first request refused for its temperature, sent again without; then every request without
    assert [r["action"] for r in server.chat_requests()] == ["ok"] * 5
    assert bodies[0]["temperature"] == 0.0 and "temperature" not in bodies[1]
    assert all(b["max_completion_tokens"] == 64 and "max_tokens" not in b for b in bodies)
    assert all("temperature" not in b for b in bodies[1:])
    results = _results(out)
    assert results["environment"]["generation"] == {"temperature": None, "temperature_note": DEFAULT_ONLY}
    backend = results["backend"]
    assert backend["settings"]["token_budget"] == "max_completion_tokens"
    assert backend["settings"]["reasoning_effort"] is None
    thought = len(THOUGHT.split())
    assert backend["usage"] == {
        "requests": 4,
        "prompt_tokens": 40,
        "completion_tokens": 4 * (1 + thought),
        "reasoning_tokens": 4 * thought,
    }
    assert "sampled at the model's default temperature" in capsys.readouterr().out


def test_a_plain_server_gets_max_completion_tokens_and_greedy_recorded_as_before(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer() as server:
        assert main(_eval(server, out)) == 0
    bodies = _bodies(server)
    assert len(bodies) == 4 and all(
        b["max_completion_tokens"] == 16 and b["temperature"] == 0.0 for b in bodies
    )
    assert all("reasoning_effort" not in b and "max_tokens" not in b for b in bodies)
    results = _results(out)
    assert results["environment"]["generation"] == {"temperature": 0.0}
    assert "reasoning_tokens" not in results["backend"]["usage"]  # as before: no reasoning counted


def test_an_old_server_that_refuses_max_completion_tokens_gets_max_tokens(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(refuse=("max_completion_tokens",)) as server:
        assert main(_eval(server, out)) == 0
    bodies = _bodies(server)
    assert "max_completion_tokens" in bodies[0] and len(bodies) == 5
    assert all(b["max_tokens"] == 16 and "max_completion_tokens" not in b for b in bodies[1:])
    results = _results(out)
    assert results["backend"]["settings"]["token_budget"] == "max_tokens"
    assert results["environment"]["generation"] == {"temperature": 0.0}


def test_reasoning_effort_is_sent_and_recorded(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(**REASONING_MODEL) as server:
        assert main(_eval(server, out, "--reasoning-effort", "low")) == 0
    assert all(b["reasoning_effort"] == "low" for b in _bodies(server))
    assert _results(out)["backend"]["settings"]["reasoning_effort"] == "low"
    assert _results(out)["model"]["reasoning_effort"] == "low"  # in the run's identity


def test_a_resume_under_another_effort_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    more = ("--metrics", "accuracy", "--batch-size", "2", "--max-concurrency", "1", "--max-retries", "1")
    with StandInServer(policy=lambda n: "ok" if n < 2 else "die") as server:
        assert main(_eval(server, out, *more, "--reasoning-effort", "low")) == 2
    assert len((out / "samples.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    with StandInServer() as server:  # the rest of the items under another effort, or none: refused
        for effort in (("--reasoning-effort", "high"), ()):
            assert main(_eval(server, out, *more, *effort)) == 2
            assert "reasoning_effort" in capsys.readouterr().err.strip().splitlines()[-1]
        assert main(_eval(server, out, *more, "--reasoning-effort", "low")) == 0
    assert len((out / "samples.jsonl").read_text().splitlines()) == _results(out)["dataset"]["n"] > 2


def test_a_refused_reasoning_effort_is_one_line_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(refuse=("reasoning_effort",)) as server:
        assert main(_eval(server, tmp_path / "run", "--reasoning-effort", "high")) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == (
        f"mmspubench eval: error: --backend openai: {server.base_url} refused the parameter "
        "'reasoning_effort' (HTTP 400: Unsupported parameter: 'reasoning_effort' is not supported "
        "with this model.); change or drop --reasoning-effort"
    )
    assert len(server.chat_requests()) == 1  # not sent again: the user's choice, not the server's


def test_reasoning_effort_with_a_local_backend_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--reasoning-effort", "low", "--limit", "1"]) == 2
    assert "--reasoning-effort is used only with --backend openai" in capsys.readouterr().err


def test_an_unknown_effort_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--backend", "openai", "--reasoning-effort", "extreme"])
    assert exit_.value.code == 2 and "invalid choice: 'extreme'" in capsys.readouterr().err


def _model(server: StandInServer) -> OpenAIModel:
    options = Options(base_url=server.base_url, api_key_env="MMSPU_TEST_KEY", max_retries=0)
    features = ServerFeatures(prompt_logprobs=False, add_special_tokens=None)
    info = ModelInfo(id="m", path="m", revision=None, dtype="server", adapter="openai-chat")
    return OpenAIModel("m", options, features, info)


def _generate(model: OpenAIModel, n: int = 2) -> list[Generation]:
    """The replies, each timed (its ``seconds`` checked, then set aside)."""
    context = model.render_text(ChatPrompt(system="", user_text="Which?", assistant_prefix=""))
    replies = model.generate([None] * n, [context] * n, 32)
    assert all(r.seconds is not None and r.seconds >= 0 for r in replies)
    return [dataclasses.replace(r, seconds=None) for r in replies]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_each_reply_keeps_its_reasoning_finish_reason_and_tokens(field: str) -> None:
    with StandInServer(answer="C", reasoning_field=field, **REASONING_MODEL) as server:
        replies = _generate(_model(server))
    thought = len(THOUGHT.split())
    expected = Generation("C", THOUGHT, "stop", 10, 1 + thought, thought)
    assert replies == [expected, expected]


def test_a_reply_cut_by_the_budget_says_length_and_a_server_without_reasoning_gives_none() -> None:
    with StandInServer(policy=lambda n: "length" if n == 1 else "ok") as server:
        replies = _generate(_model(server))
    assert [g.finish_reason for g in replies] == ["stop", "length"]
    assert replies[0] == Generation("A", None, "stop", 10, 1, None)


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("reasoning_int", "message reasoning_content is int 5; expected a string"),
        ("bad_finish", "finish_reason is int 7; expected a string"),
    ],
)
def test_a_malformed_reasoning_or_finish_reason_is_one_line(action: str, said: str) -> None:
    with StandInServer(policy=lambda n: action) as server, pytest.raises(MMSpuBenchError) as err:
        _generate(_model(server), 1)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_reasoning_tokens_are_summed_and_a_count_gone_wrong_is_not_counted() -> None:
    with StandInServer(reasoning="one two three") as server:
        model = _model(server)
        replies = _generate(model, 2)
    assert [g.reasoning_tokens for g in replies] == [3, 3]
    assert model.usage["reasoning_tokens"] == 6
    details = SimpleNamespace(reasoning_tokens=5)
    assert reasoning_count(SimpleNamespace(completion_tokens=2, completion_tokens_details=details)) is None
    assert reasoning_count(SimpleNamespace(completion_tokens=9, completion_tokens_details=details)) == 5
    wrong = SimpleNamespace(reasoning_tokens=-1)
    assert reasoning_count(SimpleNamespace(completion_tokens=9, completion_tokens_details=wrong)) is None


@pytest.mark.parametrize("value", [None, -3, "12", 2.0, True, float("nan")])
def test_a_usage_count_missing_or_not_a_count_is_not_counted(value: Any) -> None:
    usage = SimpleNamespace(prompt_tokens=value, completion_tokens=value)
    assert count(usage, "prompt_tokens") is None and count(None, "prompt_tokens") is None
    details = SimpleNamespace(reasoning_tokens=value)
    assert reasoning_count(SimpleNamespace(completion_tokens=9, completion_tokens_details=details)) is None
    assert reasoning_count(SimpleNamespace()) is None  # no details at all


def test_a_reply_whose_usage_is_wrong_keeps_its_answer_with_nothing_counted() -> None:
    with StandInServer(policy=lambda n: "bad_usage") as server:
        (reply,) = _generate(_model(server), 1)
    assert reply == Generation("A", None, "stop", None, None, None)


class _Refusal(Exception):
    """A 400 as the openai client raises it (``status_code``, ``body``, ``param``, ``code``)."""

    def __init__(self, body: dict[str, Any], status: int = 400) -> None:
        super().__init__(body.get("message"))
        self.status_code, self.body = status, body
        self.param, self.code = body.get("param"), body.get("code")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (REFUSALS["temperature"]["error"], Sampling(greedy=False)),
        (REFUSALS["max_completion_tokens"], Sampling(budget="max_tokens")),
        (
            {"message": "Unrecognized request argument supplied: max_completion_tokens"},
            Sampling("max_tokens"),
        ),
        # out of range, not unknown: no fallback (one line naming --max-new-tokens instead)
        (
            {
                "message": "max_completion_tokens is too large: 900000. This model supports at most "
                "100000 completion tokens, whereas you provided 900000.",
                "param": "max_completion_tokens",
                "code": "invalid_value",
            },
            None,
        ),
        ({"message": "temperature must be a number", "param": None, "code": 400}, None),
        (REFUSALS["reasoning_effort"]["error"], None),
        ({"message": "the prompt is too long", "param": None}, None),
    ],
)
def test_which_refusals_the_first_request_answers(body: dict[str, Any], expected: Sampling | None) -> None:
    assert adjusted(Sampling(), _Refusal(body)) == expected


def test_a_refused_budget_value_is_one_line_naming_max_new_tokens() -> None:
    body = {"message": "max_tokens is too large: 900000.", "param": "max_tokens", "code": "invalid_value"}
    options = Options(base_url="http://127.0.0.1:1/v1")
    assert describe_error(_Refusal(body), options) == (
        "--backend openai: http://127.0.0.1:1/v1 refused the parameter 'max_tokens' "
        "(HTTP 400: max_tokens is too large: 900000.); change --max-new-tokens"
    )
    assert refusal_line(_Refusal({"message": "no such model"})) is None  # the existing line
