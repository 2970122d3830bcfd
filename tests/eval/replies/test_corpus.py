"""The hand-labelled corpus of realistic replies (corpus.jsonl), split and read by the strict parser.

Each line: ``id``, ``kind``, ``style``, ``text`` (optional ``reasoning``, ``finish_reason``), four
``options``, and three hand labels: ``expected`` (the letter a careful reader takes as the model's
answer, or null), ``truncated`` (cut inside the reasoning), ``strict`` (what the strict parser must
give: its rules are conservative, so many sentence answers are null there; that is what the
measurement of bench/reply_reading.py shows).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mmspubench.eval.protocol import Generation
from mmspubench.eval.replies.parse import parse_answer
from mmspubench.eval.replies.reasoning import STYLES, split_reply

CORPUS = Path(__file__).with_name("corpus.jsonl")
SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "reply_reading.py"
ROWS: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
CLOSING = {"think": "</think>", "think-open": "</think>", "glm": "</think>", "kimi": "◁/think▷"}
FIELDS = {
    "id",
    "kind",
    "style",
    "text",
    "reasoning",
    "finish_reason",
    "options",
    "expected",
    "truncated",
    "strict",
}
LETTER = re.compile(r"\b[A-D]\b")


def generation(row: dict[str, Any]) -> Generation:
    return Generation(row["text"], reasoning=row.get("reasoning"), finish_reason=row.get("finish_reason"))


def test_the_corpus_is_well_formed() -> None:
    assert len(ROWS) >= 220
    assert len({row["id"] for row in ROWS}) == len(ROWS)
    for row in ROWS:
        assert set(row) <= FIELDS, row["id"]
        assert row["style"] in STYLES and len(row["options"]) == 4, row["id"]
        assert row["expected"] in (None, "A", "B", "C", "D") and row["strict"] in (None, "A", "B", "C", "D")
        # The strict parser never reads a letter a careful reader does not, and nothing cut.
        assert row["strict"] in (None, row["expected"]), row["id"]
        assert not (row["truncated"] and (row["strict"] or row["expected"])), row["id"]
    kinds = {row["kind"] for row in ROWS}
    assert {"think-qwen", "think-qwen-open", "think-glm-box", "think-glm-answer-tag", "think-kimi"} <= kinds
    assert {"think-truncated", "server-reasoning", "letter-in-reasoning-only", "refusal"} <= kinds
    assert {"hedge-two-letters", "bold-markdown", "answer-is-sentence", "option-text-sentence"} <= kinds


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_each_reply_is_split_and_read_as_labelled(row: dict[str, Any]) -> None:
    split = split_reply(generation(row), row["style"])
    assert split.truncated is row["truncated"]
    assert parse_answer(split.answer_text, row["options"]) == row["strict"]
    if split.truncated:
        assert split.answer_text == ""


def _other_letters(text: str) -> str:
    return LETTER.sub(lambda m: "ABCD"[("ABCD".index(m.group()) + 1) % 4], text)


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_a_letter_in_the_reasoning_never_counts(row: dict[str, Any]) -> None:
    # Every letter of the reasoning changed (the inline part up to the last closing marker, the
    # whole text when cut inside it, the server's part): the reading stays the same.
    text, closing = row["text"], CLOSING.get(row["style"])
    end = text.rfind(closing) if closing and closing in text else (len(text) if row["truncated"] else 0)
    changed = Generation(
        _other_letters(text[:end]) + text[end:],
        reasoning=None if row.get("reasoning") is None else _other_letters(row["reasoning"]),
        finish_reason=row.get("finish_reason"),
    )
    before, after = split_reply(generation(row), row["style"]), split_reply(changed, row["style"])
    assert (after.answer_text, after.truncated) == (before.answer_text, before.truncated)
    assert parse_answer(after.answer_text, row["options"]) == row["strict"]
    if row["kind"] == "letter-in-reasoning-only":
        assert before.reasoning is not None and LETTER.search(before.reasoning)


def _load_script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("reply_reading", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "reply_reading", module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _expected_line(name: str, rows: list[dict[str, Any]]) -> list[str]:
    # Computed from the labels alone: the strict reading is the ``strict`` label (checked above).
    n = len(rows)
    read = 100 * sum(r["strict"] is not None for r in rows) / n
    agree = 100 * sum(r["strict"] == r["expected"] for r in rows) / n
    cut = 100 * sum(r["truncated"] for r in rows) / n
    return [name, str(n), f"{read:.1f}", f"{agree:.1f}", f"{cut:.1f}"]


def test_the_bench_script_prints_the_corpus_figures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _load_script(monkeypatch).main([])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["kind", "n", "read", "%", "agree", "%", "truncated", "%"]
    kinds = sorted({row["kind"] for row in ROWS})
    expected = [_expected_line(k, [r for r in ROWS if r["kind"] == k]) for k in kinds]
    expected.append(_expected_line("overall", ROWS))
    assert [line.split() for line in lines[1:]] == expected
    # Counted from the labels: 275 replies, 127 read by the parser (127/275 = 46.2 %), 184 agreeing
    # with the reader (66.9 %), 18 cut inside their reasoning (6.5 %).
    assert expected[-1] == ["overall", "275", "46.2", "66.9", "6.5"]
