"""``mmspubench eval --backend openai`` against stand-in thinking servers on 127.0.0.1: reasoning
inline (``<think>``) and apart (``reasoning_content``), with usage, end to end into samples.jsonl,
results.json and ``report``; a reasoning block the budget cut is truncated, never unparsed, and a
run with too many of them ends with one line on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the api extra (openai) is not installed")

from mmspubench.eval.cli import main

from tests.eval.standin_server import StandInServer

INLINE = "<think>Not C, and surely not D.</think>\n\nB"
CUT = "<think>It is surely C because"


def _eval(server: StandInServer, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model",
        "--limit", "6", "--out", str(out), "--no-progress", "--api-key-env", "MMSPU_TEST_KEY",
        "--metrics", "accuracy", *more,
    ]  # fmt: skip


def _samples(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPU_TEST_KEY", "sk-test-thinking")


def _report(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    header, _, row = capsys.readouterr().out.strip().splitlines()[:3]
    cells = zip(header.strip("|").split(" | "), row.strip("|").split(" | "), strict=True)
    return {h.strip(): c.strip() for h, c in cells}


def test_inline_reasoning_is_kept_whole_and_the_answer_read_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with StandInServer(answer_of=lambda body: INLINE, word_tokens=True) as server:
        assert main(_eval(server, out)) == 0
    for sample in _samples(out):
        assert sample["raw_output"] == INLINE and sample["prediction"] == "B"  # never C or D
        assert sample["reasoning"] == "Not C, and surely not D." and sample["answer_text"] == "B"
        assert sample["read_by"] == "parser" and "truncated" not in sample
        assert sample["tokens"] == {"prompt": 10, "completion": len(INLINE.split())}
        assert isinstance(sample["seconds"], float) and sample["seconds"] >= 0  # its request's time
    results = json.loads((out / "results.json").read_text())
    replies = results["replies"]
    assert (replies["n"], replies["parsed"], replies["unparsed"], replies["truncated"]) == (6, 6, 0, 0)
    assert replies["tokens"]["completion"] == {"total": 6 * 7, "mean": 7.0, "counted": 6}
    assert results["model"]["reasoning_style"] == "think"
    cells = _report(out, capsys)
    assert cells["Tokens"] == "7.0" and cells["Unparsed"] == "0" and cells["Truncated"] == "0"
    assert cells["Read by (parser / judge / none %)"] == "100.00 / 0.00 / 0.00"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_the_server_returns_apart_is_recorded_with_its_tokens(tmp_path: Path, field: str) -> None:
    out = tmp_path / "run"
    with StandInServer(answer="C", reasoning="maybe A or B", reasoning_field=field) as server:
        assert main(_eval(server, out)) == 0
    for sample in _samples(out):
        assert sample["raw_output"] == "C" and sample["prediction"] == "C" and "answer_text" not in sample
        assert sample["reasoning"] == "maybe A or B" and sample["read_by"] == "parser"
        assert sample["tokens"] == {"prompt": 10, "completion": 5, "reasoning": 4}
    replies = json.loads((out / "results.json").read_text())["replies"]
    assert replies["tokens"]["reasoning"] == {"total": 24, "mean": 4.0, "counted": 6}


def test_a_reasoning_block_cut_by_the_budget_is_truncated_and_the_run_says_to_raise_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with StandInServer(
        answer_of=lambda body: CUT, finish_of=lambda body: "length", word_tokens=True
    ) as server:
        assert main(_eval(server, out, "--max-new-tokens", "6")) == 0  # results written, exit 0
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1] == (
        "warning: 6 of 6 replies (100.0%, above --max-truncated 0.05) were cut inside their reasoning "
        "by the token budget and counted wrong; raise --max-new-tokens"
    )
    for sample in _samples(out):
        assert sample["truncated"] is True and sample["prediction"] is None and sample["read_by"] == "none"
        assert sample["reasoning"] == "It is surely C because" and sample["answer_text"] == ""
    results = json.loads((out / "results.json").read_text())
    assert results["accuracy"]["unparsed"] == 6  # wrong, as every answer not read
    assert (results["replies"]["unparsed"], results["replies"]["truncated"]) == (0, 6)
    cells = _report(out, capsys)
    assert cells["Truncated"] == "6" and cells["Unparsed"] == "0"


def test_the_truncated_line_is_not_written_under_the_limit_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with StandInServer(answer_of=lambda body: CUT, finish_of=lambda body: "length") as server:
        assert main(_eval(server, out, "--max-truncated", "1")) == 0
    assert "cut inside their reasoning" not in capsys.readouterr().err
    assert json.loads((out / "results.json").read_text())["config"]["max_truncated"] == 1.0


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "lots"])
def test_a_max_truncated_outside_0_to_1_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["eval", "--max-truncated", value])
    except SystemExit as exit_:  # argparse's own line for a value that is not a number
        code = exit_.code
    assert code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage lines come before
    assert last.startswith("mmspubench eval: error: ") and "--max-truncated" in last


@pytest.mark.parametrize(
    ("answer", "reasoning", "finish", "expected"),
    [
        # reasoning_content AND an inline block: both are reasoning, the answer read after them
        ("<think>Not C.</think>B", "maybe A", "stop", {"reasoning": "maybe A\n\nNot C.", "prediction": "B"}),
        # the server's reasoning, then the budget ended before any answer: truncated, not unparsed
        ("", "maybe A", "length", {"reasoning": "maybe A", "truncated": True, "prediction": None}),
        # a closed block and the budget ended right after it: truncated too
        ("<think>Not C.</think>", None, "length", {"reasoning": "Not C.", "truncated": True}),
        # a closed block and the model stopped with nothing after it: unparsed, not truncated
        ("<think>Not C.</think>", None, "stop", {"reasoning": "Not C.", "prediction": None}),
        # an empty reply without reasoning: unparsed, its lines as before
        ("", None, "stop", {"prediction": None, "raw_output": ""}),
    ],
)
def test_a_server_thinking_both_ways_or_stopping_early_is_read_as_the_rules_say(
    tmp_path: Path, answer: str, reasoning: str | None, finish: str, expected: dict[str, Any]
) -> None:
    out = tmp_path / "run"
    server = StandInServer(answer_of=lambda body: answer, reasoning=reasoning, finish_of=lambda body: finish)
    with server:
        assert main(_eval(server, out)) == 0
    for sample in _samples(out):
        assert sample["raw_output"] == answer and sample.get("prediction") == expected.get("prediction")
        assert {k: sample.get(k) for k in expected} == expected
        assert sample.get("read_by", "none") == ("parser" if expected.get("prediction") else "none")
        assert sample.get("truncated", False) == expected.get("truncated", False)
