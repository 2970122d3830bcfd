"""``--extract judge``: the judge's reply read strictly, the client against a stand-in judge on
127.0.0.1 (a letter, none, junk, 500s, down), the options' one-line refusals and the judge in the
run's identity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.config import RunConfig, with_options
from mmspubench.eval.replies.judge import (
    JUDGE_MAX_TOKENS,
    JUDGE_PROMPT_VERSION,
    JudgeClient,
    judge_for,
    judge_messages,
    read_verdict,
)

from tests.eval.standin_judge import JUNK, judge_server, standin_verdict
from tests.eval.standin_server import StandInServer
from tests.helpers.run_folders import eval_run

OPTIONS = ["a kite", "a rocket", "a snowman", "a sunflower"]
JUDGE = {"extract": "judge", "judge_model": "judge-1", "judge_api_key_env": "none"}


@pytest.mark.parametrize(
    ("reply", "letter", "outcome"),
    [
        ("C", "C", "letter"),
        (" c.\n", "C", "letter"),
        ("(B)", "B", "letter"),
        ("**D**", "D", "letter"),
        ("None.", None, "none"),
        ("NONE", None, "none"),
        ("Answer: C", None, "junk"),
        ("C) a kite", None, "junk"),
        ("AB", None, "junk"),
        ("E", None, "junk"),
        ("", None, "junk"),
        (None, None, "junk"),
        ("no answer", None, "junk"),
    ],
)
def test_the_judge_reply_is_read_strictly(reply: str | None, letter: str | None, outcome: str) -> None:
    verdict = read_verdict(reply)
    assert (verdict.letter, verdict.outcome, verdict.reply) == (letter, outcome, reply or "")


def test_a_letter_beyond_the_options_is_junk_and_a_long_reply_is_kept_short() -> None:
    assert read_verdict("D", n_options=3).outcome == "junk"
    kept = read_verdict("x" * 5000 + "\x1b[31m")
    assert kept.outcome == "junk" and len(kept.reply) == 500


def test_the_prompt_holds_the_question_the_options_and_the_answer() -> None:
    system, user = judge_messages("What is shown?", OPTIONS, "It flies.")
    assert "one letter (A, B, C or D) or the word none" in system["content"]
    assert user["content"].startswith("Question: What is shown?\nOptions:\nA. a kite\nB. a rocket\n")
    assert "<<<\nIt flies.\n>>>" in user["content"]


@pytest.mark.parametrize(
    ("mode", "answer", "letter", "outcome"),
    [
        ("rules", "The answer is (C) snowman.", "C", "letter"),
        ("rules", "It is a rocket.", "B", "letter"),
        ("rules", "A or B", None, "none"),
        ("rules", "I cannot tell from the image.", None, "none"),
        ("none", "C", None, "none"),
        ("junk", "It is a rocket.", None, "junk"),
    ],
)
def test_the_client_reads_the_standin_judge(mode: str, answer: str, letter: str | None, outcome: str) -> None:
    with judge_server(mode) as server:
        judge = JudgeClient("judge-1", server.base_url, "none")
        assert judge.read("What is shown?", OPTIONS, answer) == letter
        assert judge.last is not None and judge.last.outcome == outcome
        if outcome == "junk":
            assert judge.last.reply == JUNK  # kept, not guessed at
        (request,) = server.chat_requests()
    body = request["body"]
    assert body["model"] == "judge-1" and body["temperature"] == 0.0
    assert body["max_completion_tokens"] == JUDGE_MAX_TOKENS and "max_tokens" not in body
    assert body["messages"] == judge_messages("What is shown?", OPTIONS, answer)


def test_a_judge_refusing_temperature_and_max_tokens_is_asked_without_them() -> None:
    server = StandInServer(answer="B", refuse=("temperature", "max_completion_tokens"))
    with server:
        judge = JudgeClient("o-judge", server.base_url, "none")
        assert judge.read("q", OPTIONS, "rocket, surely") == "B"
        assert judge.read("q", OPTIONS, "rocket again") == "B"
    assert not judge.sampling.greedy and judge.sampling.budget == "max_tokens"
    last = server.chat_requests()[-1]["body"]
    assert "temperature" not in last and last["max_tokens"] == JUDGE_MAX_TOKENS


def test_a_judge_that_answers_500_is_one_line_naming_the_option() -> None:
    with judge_server(policy=lambda n: "500") as server:
        judge = JudgeClient("judge-1", server.base_url, "none", max_retries=1)
        with pytest.raises(MMSpuBenchError) as caught:
            judge.read("q", OPTIONS, "It is a rocket.")
        assert len(server.chat_requests()) == 2  # retried once
    line = str(caught.value)
    assert line.startswith("--judge-base-url: request to http://127.0.0.1:") and "HTTP 500" in line
    assert "\n" not in line


def test_a_judge_that_is_down_is_one_line_before_the_run(tmp_path: Path) -> None:
    with judge_server() as server:
        url = server.base_url
    config = with_options(None, {**JUDGE, "judge_base_url": url, "metrics": "accuracy"})
    with pytest.raises(MMSpuBenchError) as caught:
        judge_for(config, max_retries=0)
    assert str(caught.value).startswith(f"--judge-base-url: request to {url} failed (APIConnectionError")


def test_judge_for_asks_the_judge_once_and_gives_none_without_extract_judge() -> None:
    assert judge_for(with_options(None, {"metrics": "accuracy"})) is None
    with judge_server() as server:
        config = with_options(None, {**JUDGE, "judge_base_url": server.base_url, "metrics": "accuracy"})
        judge = judge_for(config)
        assert judge is not None and len(server.chat_requests()) == 1
    assert judge.identity == {
        "model": "judge-1",
        "base_url": server.base_url,
        "prompt_version": JUDGE_PROMPT_VERSION,
    }


def test_the_identity_masks_credentials_of_the_url() -> None:
    judge = JudgeClient("j", "http://user:hunter2secret@127.0.0.1:1/v1", "none")
    assert judge.identity["base_url"] == "http://user:***@127.0.0.1:1/v1"


REFUSED: list[tuple[list[str], str]] = [
    (["--judge-model", "j"], "--judge-model is used only with --extract judge"),
    (["--judge-base-url", "http://127.0.0.1:1/v1"], "--judge-base-url is used only with --extract judge"),
    (["--judge-api-key-env", "JUDGE_KEY"], "--judge-api-key-env is used only with --extract judge"),
    (["--extract", "judge", "--judge-base-url", "http://h/v1"], "--extract judge needs --judge-model NAME"),
    (["--extract", "judge", "--judge-model", "j"], "--extract judge needs --judge-base-url URL"),
    (
        [
            "--extract",
            "judge",
            "--judge-model",
            "j",
            "--judge-base-url",
            "http://h/v1",
            "--answer-mode",
            "logprob",
        ],
        "--extract judge reads generated answers; it needs --answer-mode generate, got logprob",
    ),
    (
        ["--extract", "judge", "--judge-model", "j", "--judge-base-url", "http://h/v1", "--metrics", "cgla"],
        "--extract judge reads the answers of --metrics accuracy, not asked for in --metrics cgla",
    ),
    (["--extract", "judge", "--judge-model", "", "--judge-base-url", "http://h/v1"], "--judge-model: empty"),
    (
        ["--extract", "judge", "--judge-model", "j", "--judge-base-url", "http://h/v1\x1b[2J"],
        "--judge-base-url 'http://h/v1\\x1b[2J': a control character",
    ),
    (
        ["--extract", "judge", "--judge-model", "j", "--judge-base-url", "http://h/v1?api_key=abcd12345"],
        "--judge-base-url holds a credential (not shown",
    ),
    (
        ["--extract", "judge", "--judge-model", "j", "--judge-base-url", "ftp://h/v1"],
        "--judge-base-url 'ftp://h/v1': expected an http:// or https:// URL",
    ),
    (
        ["--extract", "judge", "--judge-model", "j", "--judge-base-url", "http://u:pw12345@h/v1"],
        "--judge-base-url holds a credential (not shown",
    ),
    (
        ["--extract", "judge", "--judge-model", "j", "--judge-base-url", "http://h/v1"],
        "--judge-api-key-env OPENAI_API_KEY: the variable is not set",
    ),
    (
        [
            "--extract",
            "judge",
            "--judge-model",
            "j",
            "--judge-base-url",
            "http://h/v1",
            "--judge-api-key-env",
            "sk-abcdefghijklmnopqrstuv",
        ],
        "--judge-api-key-env: expected the NAME of the environment variable",
    ),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED)
def test_each_judge_option_refusal_is_one_line_and_writes_nothing(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mmspubench.dataset_builder.load as load

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(load, "load_pinned", lambda *a, **k: pytest.fail("loaded before the check"))
    assert (
        main(["eval", "--out", str(tmp_path / "run"), "--no-progress", "--metrics", "accuracy", *argv]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert "pw12345" not in err[0] and "abcdefghij" not in err[0]
    assert list(tmp_path.iterdir()) == []


def test_the_judge_is_recorded_only_when_asked_for() -> None:
    plain = with_options(None, {"metrics": "accuracy"})
    assert not {"extract", "judge_model", "judge_base_url", "judge_prompt"} & (
        set(plain.to_json()) | set(plain.identity())
    )
    judged = with_options(None, {**JUDGE, "judge_base_url": "http://127.0.0.1:1/v1", "metrics": "accuracy"})
    expected = {
        "extract": "judge",
        "judge_model": "judge-1",
        "judge_base_url": "http://127.0.0.1:1/v1",
        "judge_prompt": JUDGE_PROMPT_VERSION,
    }
    assert {k: judged.identity()[k] for k in expected} == expected
    assert {k: judged.to_json()[k] for k in expected} == expected
    assert RunConfig.from_json(judged.to_json()).identity() == judged.identity()
    assert "judge_api_key_env" not in judged.to_json()


def _config(url: str, **options: Any) -> RunConfig:
    judge = {**JUDGE, "judge_base_url": url}
    return RunConfig(
        model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), batch_size=3, **{**judge, **options}
    )


def test_results_record_the_judge(tmp_path: Path) -> None:
    from tests.eval.fakes import FakeModel

    with judge_server() as server:  # the run asks the judge once before it starts
        out = eval_run(tmp_path / "run", FakeModel, n=4, config=_config(server.base_url))
    assert out is not None
    assert out["config"]["extract"] == "judge" and out["config"]["judge_model"] == "judge-1"
    assert out["judge"] == {
        "model": "judge-1",
        "base_url": server.base_url,
        "prompt_version": JUDGE_PROMPT_VERSION,
        "api_key_env": "none",
        "max_tokens": JUDGE_MAX_TOKENS,
    }
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["config"]["judge_model"] == "judge-1"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"judge_model": "judge-2"}, "judge_model"),
        ({"judge_base_url": "http://127.0.0.1:2/v1"}, "judge_base_url"),
        ({"judge_prompt": "judge-v0"}, "judge_prompt"),
        ({"extract": "parser", "judge_model": None, "judge_base_url": None, "judge_prompt": None}, "extract"),
    ],
)
def test_a_resume_with_another_judge_is_refused(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    from tests.eval.fakes import FakeModel

    with judge_server() as server:
        eval_run(tmp_path / "run", FakeModel, n=4, config=_config(server.base_url))
        (tmp_path / "run" / "results.json").unlink()  # unfinished: the folder's identity is checked
        before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
        with pytest.raises(MMSpuBenchError, match=f"different run.*{field}"):
            eval_run(tmp_path / "run", FakeModel, n=4, config=_config(server.base_url, **change))
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before


def test_the_standin_rules() -> None:
    assert standin_verdict("A red car is parked.", ["a red car", "b", "c", "d"]) == "A"  # the article
    assert standin_verdict("A or B", OPTIONS) == "none"
    assert standin_verdict("The answer is B, a snowman.", OPTIONS) == "B"  # the letter wins
    assert standin_verdict("not a kite but a rocket", OPTIONS) == "none"  # two texts


SWEEP_JUDGE = {
    "answer_mode": "generate",
    "extract": "judge",
    "judge_model": "judge-1",
    "judge_base_url": "http://127.0.0.1:1/v1",
    "judge_api_key_env": "none",
}


def test_a_sweep_passes_the_judge_options_to_each_run(tmp_path: Path) -> None:
    from mmspubench.sweep.launchers.registry import sections
    from mmspubench.sweep.spec import load_sweep

    from tests.sweep.sweep_files import write_sweep

    path = write_sweep(tmp_path, metrics=["accuracy"], options={"limit": 2, **SWEEP_JUDGE})
    for run in load_sweep(path, sections()).runs:
        argv = list(run.argv)
        assert argv[argv.index("--extract") + 1] == "judge"
        assert argv[argv.index("--judge-model") + 1] == "judge-1"
        assert argv[argv.index("--judge-api-key-env") + 1] == "none"
        assert run.config.identity()["judge_prompt"] == JUDGE_PROMPT_VERSION


def test_a_sweep_refuses_a_judge_option_without_extract_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.sweep.sweep_files import write_sweep

    path = write_sweep(tmp_path, options={"limit": 2, "judge_model": "judge-1"})
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--judge-model is used only with --extract judge" in err[0]


SENTENCE = "Surely the green bike, nothing else."
"""An answer in a sentence: no letter, no option's text word for word (the parser reads nothing)."""


def test_a_run_asks_the_judge_for_what_the_parser_leaves_unparsed(tmp_path: Path) -> None:
    from mmspubench.eval.replies.parse import parse_answer

    from tests.eval.fakes import FakeModel

    class Sentences(FakeModel):
        def generate(self, images: Any, contexts: Any, max_new_tokens: int) -> list[str]:
            return [SENTENCE] * len(contexts)

    options = ["a red car", "a blue bus", "a green bike", "a yellow taxi"]  # the fakes' items
    assert parse_answer(SENTENCE, options) is None and standin_verdict(SENTENCE, options) == "C"
    with judge_server() as server:
        out = eval_run(
            tmp_path / "run", Sentences, n=4, config=_config(server.base_url, metrics=("accuracy",))
        )
    assert out is not None
    rows = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    judged = [r for r in rows if r.get("read_by") == "judge"]
    assert len(judged) == len(rows) == 4 and all(r["prediction"] == "C" for r in judged)
    assert all(r["judge"] == "C" for r in judged)  # the judge's reply kept: the evidence submit reads
    assert out["replies"]["judged"] == 4 and out["replies"]["parsed"] == 0


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("html", "the judge's reply is '<html> bad gateway</html>'"),
        ("number", "the judge's reply is 5"),
        ("no_choices", "the judge's reply has no choices"),
        ("content_int", "the judge's reply's message content is int 5"),
        ("content_list", "the judge's reply's message content is list"),
    ],
)
def test_a_judge_answer_that_is_no_chat_completion_is_one_line_not_a_verdict(action: str, said: str) -> None:
    with judge_server(policy=lambda n: action) as server:
        judge = JudgeClient("judge-1", server.base_url, "none", max_retries=0)
        with pytest.raises(MMSpuBenchError) as caught:
            judge.read("q", OPTIONS, "It is a rocket.")
    line = str(caught.value)
    assert line.startswith("--judge-base-url: the judge server's answer is not usable: "), line
    assert said in line and "\n" not in line and "\x1b" not in line


def test_a_judge_that_hangs_or_floods_is_one_line_or_a_short_junk_verdict() -> None:
    with StandInServer(policy=lambda n: "hang") as server:
        judge = JudgeClient("judge-1", server.base_url, "none", max_retries=0, request_timeout=0.5)
        with pytest.raises(MMSpuBenchError, match=r"^--judge-base-url: .*APITimeoutError"):
            judge.read("q", OPTIONS, "It is a rocket.")
        server.release()
    huge = judge_server(policy=lambda n: "huge")  # a 400 with a 5 MB message
    with huge as server, pytest.raises(MMSpuBenchError) as caught:
        JudgeClient("judge-1", server.base_url, "none", max_retries=0).read("q", OPTIONS, "x")
    assert len(str(caught.value)) < 2000 and "\n" not in str(caught.value)
    binary = "\x00\xff\x1b[2J" + "B" * 200_000  # a 200 kB reply with control bytes
    with StandInServer(answer_of=lambda body: binary) as server:
        judge = JudgeClient("judge-1", server.base_url, "none", max_retries=0)
        assert judge.read("q", OPTIONS, "x") is None
    assert judge.last is not None and judge.last.outcome == "junk" and len(judge.last.reply) == 500
    assert "\x1b" not in judge.last.reply and "\x00" not in judge.last.reply
