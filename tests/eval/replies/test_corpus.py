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


SUBSET = ("r001", "r094", "r139", "r149", "r110", "r217", "r057", "r112")
# Worked by hand from the stand-in's three rules (tests/eval/standin_judge.py):
# r001 "B": the parser reads B. r094 "The answer is (C) kite.": unparsed; the judge reads the one
# letter named, C (= expected). r139 "A or B": two letters, none (= expected null). r149 "...C and
# D; I'll go with D.": two letters, none (expected D: wrong both ways). r110 "...the second option,
# a rocket." and r112 "This is a cat.": no letter ("a" is the article), one option text: B, B (=
# expected). r217: cut inside its reasoning, never judged (= expected null). r057 "A. cat" (A is
# dog): the parser refuses the mismatch (= expected null); the judge reads the letter A (wrong).
SUBSET_TABLE = [
    ["answer-is-sentence", "1", "0.0", "100.0", "0.0", "100.0"],
    ["hedge-two-letters", "2", "0.0", "0.0", "50.0", "50.0"],
    ["letter", "1", "100.0", "0.0", "100.0", "100.0"],
    ["letter-text", "1", "0.0", "100.0", "100.0", "0.0"],
    ["option-text-sentence", "2", "0.0", "100.0", "0.0", "100.0"],
    ["think-truncated", "1", "0.0", "0.0", "100.0", "100.0"],
    ["overall", "8", "12.5", "50.0", "50.0", "75.0"],
]


def test_the_judge_figures_of_a_hand_checked_subset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "subset.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in ROWS if r["id"] in SUBSET), encoding="utf-8")
    _load_script(monkeypatch).main(["--corpus", str(corpus), "--judge", "standin"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("judge: the rule-based stand-in") and "not a real LLM" in lines[0]
    assert lines[1].split() == [
        "kind",
        "n",
        "parser",
        "%",
        "judge",
        "%",
        "agree",
        "parser",
        "%",
        "agree",
        "+judge",
        "%",
    ]
    assert [line.split() for line in lines[2:]] == SUBSET_TABLE


class _RulesJudge:
    """The stand-in's rules in process (no server): what the script's HTTP judge answers."""

    def __init__(self) -> None:
        self.identity = {"model": "rules", "base_url": "", "prompt_version": ""}
        self.last_reply: str | None = None

    def read(self, question: str, options: Any, answer_text: str) -> str | None:
        from tests.eval.standin_judge import standin_verdict

        found = self.last_reply = standin_verdict(answer_text, options)
        return None if found == "none" else found


def test_the_judge_figures_of_the_corpus_follow_from_the_labels_and_the_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.eval.standin_judge import standin_verdict

    script = _load_script(monkeypatch)
    overall = script.judge_table(script.read_rows(ROWS, _RulesJudge()))[-1].split()
    # The same figures from the labels: ``strict`` is the parser's reading (checked above), the
    # judge is asked where it is null and the reply not truncated.
    judged = {
        r["id"]: standin_verdict(split_reply(generation(r), r["style"]).answer_text, r["options"])
        for r in ROWS
        if r["strict"] is None and not r["truncated"]
    }
    letters = {k: (None if v == "none" else v) for k, v in judged.items()}
    n = len(ROWS)
    both = sum((r["strict"] or letters.get(r["id"])) == r["expected"] for r in ROWS)
    read = sum(v is not None for v in letters.values())
    assert overall[2:] == [
        f"{100 * 127 / n:.1f}",
        f"{100 * read / n:.1f}",
        f"{100 * 184 / n:.1f}",
        f"{100 * both / n:.1f}",
    ]
    # The figures on the docs page (docs/metrics/accuracy.md): 90 judged, 268 agreeing.
    assert (read, both) == (90, 268)
    assert overall == ["overall", "275", "46.2", "32.7", "66.9", "97.5"]
