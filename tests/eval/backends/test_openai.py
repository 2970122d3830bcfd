"""``--backend openai`` against a stand-in server on 127.0.0.1: refusal of CGLA without prompt
log-probabilities, accuracy-only runs, retries, errors, the API key, resume after a kill.

The happy path against a real vLLM server is in ``test_vllm_equality.py`` (slow).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the api extra (openai) is not installed")

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.report import markdown_table
from mmspubench.eval.backends.openai.client import NO_PROMPT_LOGPROBS, continuation_sum, render_messages
from mmspubench.eval.backends.vllm import parse_engine_args
from mmspubench.eval.cli import main
from mmspubench.eval.config import with_options
from mmspubench.eval.protocol import ChatPrompt, ScoreRequest
from PIL import Image

from tests.eval.standin_server import StandInServer, toy_logprob

SECRET = "sk-test-0123456789abcdef-do-not-leak"


def _eval(server: StandInServer, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model",
        "--limit", "6", "--out", str(out), "--no-progress", "--api-key-env", "MMSPU_TEST_KEY", *more,
    ]  # fmt: skip


def _samples(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _questions(requests: list[dict[str, Any]]) -> list[str]:
    return [r["body"]["messages"][-1]["content"][1]["text"] for r in requests]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPU_TEST_KEY", SECRET)


def test_cgla_refused_up_front_without_prompt_logprobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer() as server:
        assert main(_eval(server, tmp_path / "run")) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the datasets progress lines
    assert err == f"mmspubench eval: error: {NO_PROMPT_LOGPROBS}"
    assert not server.chat_requests()  # refused before any item was asked
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_logprob_answers_refused_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with StandInServer() as server:
        assert main(_eval(server, tmp_path / "run", "--metrics", "accuracy", "--answer-mode", "logprob")) == 2
    assert NO_PROMPT_LOGPROBS in capsys.readouterr().err


def test_accuracy_only_run_is_marked_and_counts_usage(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(answer="B") as server:
        assert main(_eval(server, out, "--metrics", "accuracy", "--max-concurrency", "3")) == 0
    results = json.loads((out / "results.json").read_text())
    samples = _samples(out)
    assert [s["prediction"] for s in samples] == ["B"] * 6
    expected = 100 * sum(s["answer"] == "B" for s in samples) / 6
    assert results["accuracy"]["overall"] == pytest.approx(expected)
    assert results["cgla"] is None and results["accuracy_only"] is True
    backend = results["backend"]
    assert backend["name"] == "openai" and backend["settings"]["prompt_logprobs"] is False
    assert backend["usage"] == {"requests": 6, "prompt_tokens": 60, "completion_tokens": 6}
    header, _, row = markdown_table([results]).splitlines()[:3]
    cells = dict(zip(header.strip("| ").split(" | "), row.strip("| ").split(" | "), strict=True))
    assert cells["CGLA_acc"] == "acc. only" and cells["Tokens"] == "1.0"  # usage: one token a reply
    chats = server.chat_requests()
    assert len(chats) == 6 and all(r["auth"] == f"Bearer {SECRET}" for r in chats)
    image = chats[0]["body"]["messages"][1]["content"][0]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")
    assert "add_special_tokens" not in chats[0]["body"]  # no vLLM extras sent to a plain API


def test_retries_429_and_500_then_succeeds(tmp_path: Path) -> None:
    faults = {0: "429", 1: "429", 4: "500"}
    with StandInServer(policy=lambda n: faults.get(n, "ok")) as server:
        assert main(_eval(server, tmp_path / "run", "--metrics", "accuracy", "--max-concurrency", "1")) == 0
    assert len(_samples(tmp_path / "run")) == 6
    assert [r["action"] for r in server.chat_requests()].count("ok") == 6


def test_timeout_is_retried(tmp_path: Path) -> None:
    with StandInServer(policy=lambda n: "slow" if n == 0 else "ok", slow_seconds=3) as server:
        argv = _eval(server, tmp_path / "run", "--metrics", "accuracy", "--request-timeout", "0.5")
        assert main(argv) == 0
    assert len(_samples(tmp_path / "run")) == 6


def test_persistent_500_is_one_line_and_keeps_finished_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with StandInServer(policy=lambda n: "ok" if n < 2 else "500") as server:
        more = ("--metrics", "accuracy", "--batch-size", "2", "--max-retries", "2")
        assert main([*_eval(server, out, *more), "--max-concurrency", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        err.startswith("mmspubench eval: error:")
        and "HTTP 500" in err
        and "after 2 retries" in err
        and "resume" in err
    )
    assert [r["action"] for r in server.chat_requests()] == ["ok", "ok", "500", "500", "500"]
    assert len(_samples(out)) == 2  # the first chunk is on disk
    with StandInServer() as server:  # the same command resumes: only the 4 missing items are asked
        assert main(_eval(server, out, *more)) == 0
    assert len(server.chat_requests()) == 4 and len(_samples(out)) == 6


def test_server_dying_mid_run_is_one_line_then_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    more = ("--metrics", "accuracy", "--batch-size", "2", "--max-concurrency", "1", "--max-retries", "1")
    with StandInServer(policy=lambda n: "ok" if n < 2 else "die") as server:
        url = server.base_url
        assert main(_eval(server, out, *more)) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("mmspubench eval: error:") and "APIConnectionError" in err and url in err
    assert "resume" in err and len(_samples(out)) == 2
    with StandInServer() as server:
        assert main(_eval(server, out, *more)) == 0
    assert len(server.chat_requests()) == 4 and len(_samples(out)) == 6


def test_api_key_never_written_logged_or_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with StandInServer() as server:
        assert main(_eval(server, out, "--metrics", "accuracy")) == 0
    with StandInServer(policy=lambda n: "401") as server:  # its error body echoes the key
        assert main(_eval(server, tmp_path / "bad", "--metrics", "accuracy")) == 2
    captured = capsys.readouterr()
    assert "check the key in $MMSPU_TEST_KEY" in captured.err
    assert SECRET not in captured.out + captured.err
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.process
def test_killed_run_resumes_without_repeating_items(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "MMSPU_TEST_KEY": SECRET}
    with StandInServer(policy=lambda n: "ok" if n < 4 else "hang") as server:
        more = ("--metrics", "accuracy", "--batch-size", "2", "--max-concurrency", "1")
        argv = _eval(server, out, *more)
        proc = subprocess.Popen([sys.executable, "-m", "mmspubench.eval.cli", *argv], env=env)
        try:
            deadline = time.monotonic() + 120
            while not (out / "samples.jsonl").is_file() or len(_samples(out)) < 4:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            proc.kill()
            proc.wait()
        first = _questions(server.chat_requests())
    finished = {s["id"] for s in _samples(out)}
    assert len(finished) == 4
    with StandInServer() as server:  # restarted on another port: same served model, the run resumes
        assert main(_eval(server, out, *more)) == 0
        again = _questions(server.chat_requests())
    samples = _samples(out)
    assert len(samples) == 6 and len({s["id"] for s in samples}) == 6
    assert len(again) == 2 and not set(again) & set(first[:4])


def test_engine_option_checks() -> None:
    with pytest.raises(MMSpuBenchError, match="--base-url is used only with --backend openai"):
        with_options(None, {"model": "m", "backend": "vllm", "base_url": "http://x"})
    with pytest.raises(MMSpuBenchError, match="needs --base-url"):
        with_options(None, {"model": "m", "backend": "openai"})
    with pytest.raises(MMSpuBenchError, match="needs --model"):
        with_options(None, {"backend": "openai", "base_url": "http://x"})
    with pytest.raises(MMSpuBenchError, match="--engine-args is used only with --backend vllm"):
        with_options(None, {"model": "m", "engine_args": '{"a": 1}'})
    with pytest.raises(MMSpuBenchError, match="--tensor-parallel-size must be an integer from 1"):
        with_options(None, {"model": "m", "backend": "vllm", "tensor_parallel_size": 0})
    with pytest.raises(MMSpuBenchError, match="not valid JSON"):
        with_options(None, {"model": "m", "backend": "vllm", "engine_args": "{max_model_len: 1}"})
    with pytest.raises(MMSpuBenchError, match="not valid JSON"):
        parse_engine_args("{max_model_len: 1}")
    with pytest.raises(MMSpuBenchError, match="expected a JSON object"):
        parse_engine_args("[1]")
    assert parse_engine_args('{"max_model_len": 4096}') == {"max_model_len": 4096}


def test_option_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--backend", "openai", "--model", "m"]) == 2
    assert capsys.readouterr().err.strip() == (
        "mmspubench eval: error: --backend openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)"
    )


def test_continuation_sum_hand_computed() -> None:
    request = ScoreRequest(Image.new("RGB", (4, 4)), "[]", " cat")
    logprobs = [None, {"5": {"logprob": -1.0}}, {"6": {"logprob": -0.5}}, {"7": {"logprob": -0.25}}]
    assert continuation_sum([1, 5], [1, 5, 6, 7], logprobs, request) == pytest.approx(-0.75)
    with pytest.raises(MMSpuBenchError, match="not a prefix"):
        continuation_sum([1, 9], [1, 5, 6, 7], logprobs, request)
    with pytest.raises(MMSpuBenchError, match="adds no token"):
        continuation_sum([1, 5, 6, 7], [1, 5, 6, 7], logprobs, request)


def test_render_messages_layout() -> None:
    messages = json.loads(render_messages(ChatPrompt("sys", "question", "The object is:")))
    assert messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "question"}]},
        {"role": "assistant", "content": "The object is:"},
    ]
    assert [m["role"] for m in json.loads(render_messages(ChatPrompt("", "q", "")))] == ["user"]


def _one_error(err: str) -> str:
    """The one line of a failed run's stderr (datasets' progress lines may precede it): no
    traceback, no asyncio task warnings, no terminal control characters."""
    assert "Traceback" not in err and "Task exception" not in err and "\x1b" not in err, err[-3000:]
    lines = [line for line in err.strip().splitlines() if "error" in line.lower()]
    assert len(lines) == 1 and err.strip().endswith(lines[0]), err[-3000:]
    assert lines[0].startswith("mmspubench eval: error: ")
    return lines[0]


def _no_samples(out: Path) -> bool:
    return not (out / "samples.jsonl").exists() or not (out / "samples.jsonl").read_text().strip()


def test_a_scoring_server_gives_the_continuation_sum(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(scoring="vllm") as server:
        assert main(_eval(server, out, "--limit", "2")) == 0
    conditions = [c for s in _samples(out) for c in s["conditions"]]
    assert conditions and all(
        c["cgl"] == pytest.approx(sum(toy_logprob(ord(ch) + 100) for ch in c["continuation"]))
        for c in conditions
    )  # exactly the continuation's characters: no end-of-turn token, no generation prompt
    results = json.loads((out / "results.json").read_text())
    assert results["backend"]["settings"]["prompt_logprobs"] is True


def test_the_optional_version_route_is_asked_once_without_retries(tmp_path: Path) -> None:
    """A server without ``GET /version`` (a 501 here, which the client would retry with back-off for
    about 12 s) is asked once and recorded without a version."""
    with StandInServer(scoring="vllm") as server:
        assert main(_eval(server, tmp_path / "run", "--limit", "1")) == 0
    assert server.gets == ["/version"]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["environment"]["server_version"] is None


def test_a_server_that_ignores_the_cache_option_is_sent_none() -> None:
    """vLLM 0.32's server: no cached-token counts, so scoring requests never ask to read the cache."""
    with StandInServer(scoring="vllm") as server, tempfile.TemporaryDirectory() as tmp:
        assert main(_eval(server, Path(tmp) / "run", "--limit", "2")) == 0
        backend = json.loads((Path(tmp) / "run" / "results.json").read_text())["backend"]
    scoring = [r["body"] for r in server.chat_requests() if "prompt_logprobs" in r["body"]]
    assert scoring and not any("skip_reading_prefix_cache" in b for b in scoring[3:])  # after the probe
    assert backend["prefix_cache"]["read"] is False and backend["prefix_cache"]["cached_prompt_tokens"] == 0


def test_a_server_that_reads_its_prefix_cache_gives_the_same_scores(tmp_path: Path) -> None:
    """The option is sent, cached positions (garbage here, as in vLLM) are never summed: a second
    run of the same items finds every prompt cached, and those requests are rescored without it."""
    with StandInServer(scoring="prefix_cache") as server:
        for run in ("first", "again"):
            assert main(_eval(server, tmp_path / run, "--limit", "2")) == 0
    for run in ("first", "again"):
        conditions = [c for s in _samples(tmp_path / run) for c in s["conditions"]]
        assert conditions and all(
            c["cgl"] == pytest.approx(sum(toy_logprob(ord(ch) + 100) for ch in c["continuation"]))
            for c in conditions
        )
    first, again = (
        json.loads((tmp_path / run / "results.json").read_text())["backend"]["prefix_cache"]
        for run in ("first", "again")
    )
    assert first["read"] and first["cached_prompt_tokens"] > 0  # the conditions read the first one's blocks
    assert again["rescored_requests"] > 0 and again["rescored_share"] > first["rescored_share"]
    bodies = [r["body"] for r in server.chat_requests() if "prompt_logprobs" in r["body"]]
    assert any(b.get("skip_reading_prefix_cache") is False for b in bodies)
    assert any(b.get("skip_reading_prefix_cache") is True for b in bodies)  # the rescored ones


@pytest.mark.parametrize(
    ("scoring", "message"),
    [
        ("chat_ignores_continue", "ran 2 prompt tokens after the end of /tokenize's tokens"),
        ("positive", "the log-probability 25.0 for prompt token"),
        ("nan", "the log-probability nan for prompt token"),
        ("short", "prompt token ids but 17 prompt log-probabilities"),
        ("nonprefix", "tokens of the context are not a prefix"),
        ("float_tokens", "/tokenize's 'tokens' is [5.5"),
        ("string_logprob", "the log-probability '-0.5' for prompt token"),
        ("bool_ids", "'prompt_token_ids' is [1, 5"),
    ],
)
def test_a_faulty_scoring_server_is_one_line_naming_its_fault(
    scoring: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    out = tmp_path / "run"
    with StandInServer(scoring=scoring) as server:
        assert main(_eval(server, out, "--limit", "3")) == 2
    gc.collect()  # a task whose exception nobody retrieved is reported when it is collected
    line = _one_error(capsys.readouterr().err)
    assert message in line and NO_PROMPT_LOGPROBS not in line, line
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text[-2000:]
    assert _no_samples(out)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("content_int", "message content is int 5; expected a string"),
        ("content_list", "message content is list [{'type': 'text'"),
        ("no_choices", "the chat completion has no choices (got [])"),
        ("number", "the chat completion is 5; expected an object"),
        ("html", "the chat completion is '<html> bad gateway</html>'"),
    ],
)
def test_a_malformed_chat_answer_is_one_line(
    action: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with StandInServer(policy=lambda n: action) as server:
        assert main(_eval(server, out, "--metrics", "accuracy")) == 2
    line = _one_error(capsys.readouterr().err)
    assert "the server's answer is not usable" in line and message in line, line
    assert _no_samples(out)


@pytest.mark.parametrize("action", ["escape", "huge"])
def test_server_error_text_is_cleaned_and_bounded(
    action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(policy=lambda n: action) as server:  # the message echoes the Authorization header
        assert main(_eval(server, tmp_path / "run", "--metrics", "accuracy", "--max-retries", "0")) == 2
    err = capsys.readouterr().err
    line = _one_error(err)
    assert SECRET not in err and "\x9b" not in err and "\x07" not in err
    assert len(line) < 600 and "HTTP 400" in line
    if action == "escape":
        assert "bad model Bearer ***" in line


def test_api_key_env_holding_the_key_itself_is_refused_unshown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer() as server:
        argv = _eval(server, tmp_path / "run", "--metrics", "accuracy")
        argv[argv.index("MMSPU_TEST_KEY")] = SECRET
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--api-key-env: expected the NAME of the environment variable" in _one_error(err)
    assert SECRET not in err and not server.log and not (tmp_path / "run").exists()


@pytest.mark.parametrize(("value", "state"), [(None, "is not set"), ("", "is empty"), ("  ", "is empty")])
def test_an_unset_or_empty_key_variable_is_refused(
    value: str | None,
    state: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if value is None:
        monkeypatch.delenv("MMSPU_TEST_KEY")
    else:
        monkeypatch.setenv("MMSPU_TEST_KEY", value)
    with StandInServer() as server:
        assert main(_eval(server, tmp_path / "run", "--metrics", "accuracy")) == 2
    line = _one_error(capsys.readouterr().err)
    assert f"--api-key-env MMSPU_TEST_KEY: the variable {state}" in line and "--api-key-env none" in line
    assert not server.log and not (tmp_path / "run").exists()  # refused before any request or file


def test_api_key_env_none_is_a_server_without_a_key(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer() as server:
        argv = _eval(server, out, "--metrics", "accuracy")
        argv[argv.index("MMSPU_TEST_KEY")] = "none"
        assert main(argv) == 0
    assert {r["auth"] for r in server.chat_requests()} == {"Bearer EMPTY"}
    assert json.loads((out / "results.json").read_text())["backend"]["settings"]["api_key_env"] == "none"


def test_a_url_password_is_not_written_or_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with StandInServer() as server:
        url = server.base_url.replace("http://", "http://user:hunter2secret@")
        argv = _eval(server, tmp_path / "run", "--metrics", "accuracy")
        argv[argv.index(server.base_url)] = url
        assert main(argv) == 0
    settings = json.loads((tmp_path / "run" / "results.json").read_text())["backend"]["settings"]
    assert settings["base_url"] == server.base_url.replace("http://", "http://user:***@")
    assert "hunter2secret" not in capsys.readouterr().err


def test_token_counts_a_server_got_wrong_are_not_counted(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(policy=lambda n: "bad_usage" if n % 2 else "ok") as server:
        assert main(_eval(server, out, "--metrics", "accuracy")) == 0
    usage = json.loads((out / "results.json").read_text())["backend"]["usage"]
    assert usage == {"requests": 6, "prompt_tokens": 30, "completion_tokens": 3}


def test_a_server_trickling_its_answer_is_stopped_by_a_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with StandInServer(policy=lambda n: "trickle", slow_seconds=30) as server:
        started = time.monotonic()
        argv = _eval(server, tmp_path / "run", "--metrics", "accuracy", "--request-timeout", "1")
        assert main([*argv, "--max-retries", "0"]) == 2
        elapsed = time.monotonic() - started
    line = _one_error(capsys.readouterr().err)
    assert "gave no complete answer within 3 s" in line and "resume" in line
    assert elapsed < 20, elapsed  # each read came within the 1 s timeout: only the deadline stops it


def test_a_model_name_with_escape_sequences_drives_no_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    evil = "org/evil\x1b]0;owned\x07\x1b[2Jmodel"
    with StandInServer() as server:
        argv = _eval(server, out, "--metrics", "accuracy")
        refused = list(argv)
        refused[refused.index("served-model")] = evil
        assert main(refused) == 2  # refused before anything runs, the name shown escaped
        assert "a control character" in capsys.readouterr().err and not out.exists()
        assert main(argv) == 0
    # A results file holding such a name (written elsewhere, or edited) is still shown escaped.
    results = out / "results.json"
    results.write_text(
        results.read_text(encoding="utf-8").replace(
            "served-model", evil.replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
        ),
        encoding="utf-8",
    )
    assert main(["report", str(results)]) == 0
    printed = capsys.readouterr()
    assert "evil\\x1b]0;owned\\x07\\x1b[2Jmodel |" in printed.out  # shown escaped, never sent raw
    assert not set(printed.out + printed.err) & {"\x1b", "\x07"}
