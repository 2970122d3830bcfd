"""``--thinking`` on ``--backend openai``: ``chat_template_kwargs`` sent only when asked (scoring
requests with thinking off), recorded, the thinking budget, and a server's refusal as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the api extra (openai) is not installed")

from mmspubench.eval.cli import main

from tests.eval.standin_server import StandInServer

KEY = "sk-test-thinking-0123456789"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPU_TEST_KEY", KEY)


def _eval(server: StandInServer, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model",
        "--limit", "2", "--out", str(out), "--no-progress", "--api-key-env", "MMSPU_TEST_KEY", *more,
    ]  # fmt: skip


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())


def _kwargs(server: StandInServer) -> list[Any]:
    return [r["body"].get("chat_template_kwargs") for r in server.log if isinstance(r["body"], dict)]


def test_auto_sends_no_chat_template_kwargs_and_records_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(scoring="vllm") as server:
        assert main(_eval(server, out)) == 0
    assert server.log and _kwargs(server) == [None] * len(server.log)
    results = _results(out)
    assert "thinking" not in results["config"] and "thinking" not in results["model"]
    assert results["config"]["max_new_tokens"] == 16


def test_on_sends_the_switch_to_generation_and_thinking_off_to_scoring(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(scoring="vllm") as server:
        assert main(_eval(server, out, "--thinking", "on")) == 0
    bodies = [r["body"] for r in server.log]
    generation = [b for b in bodies if "max_completion_tokens" in b]
    # the probe's requests come first (nothing sent); every scoring request after the answers
    scoring = [b for b in bodies[bodies.index(generation[0]) :] if b not in generation]
    assert len(generation) == 2
    assert all(b["chat_template_kwargs"] == {"enable_thinking": True} for b in generation)
    assert all(b["max_completion_tokens"] == 8192 for b in generation)  # the thinking budget
    assert scoring and all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in scoring)
    results = _results(out)
    assert results["config"]["thinking"] == "on" and results["config"]["max_new_tokens"] == 8192
    assert results["model"]["thinking"] == {
        "mode": "on",
        "set_by": "chat_template_kwargs:enable_thinking",
        "scored_rendering": "enable_thinking=false",
    }


def test_off_sends_the_switch_off_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer() as server:
        assert main(_eval(server, out, "--thinking", "off", "--metrics", "accuracy")) == 0
    generation = [r["body"] for r in server.chat_requests() if "max_completion_tokens" in r["body"]]
    assert [b["chat_template_kwargs"] for b in generation] == [{"enable_thinking": False}] * 2
    assert _results(out)["config"]["max_new_tokens"] == 16


def test_a_server_refusing_chat_template_kwargs_is_one_line_naming_thinking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(refuse=("chat_template_kwargs",)) as server:
        code = main(_eval(server, tmp_path / "run", "--thinking", "on", "--metrics", "accuracy"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "refused the parameter 'chat_template_kwargs'" in err
    assert err.endswith("run with --thinking auto (the server takes no chat_template_kwargs)")
    assert KEY not in err
