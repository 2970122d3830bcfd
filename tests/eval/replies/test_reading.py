"""Reading a split reply (parser, judge, none), what a sample records of it and the checks of
those fields where samples.jsonl is read, and results.json's ``replies`` figures by hand."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.reading import Judge, Reading, read_reply
from mmspubench.eval.replies.reasoning import Split
from mmspubench.eval.replies.record import ReplyReading, Tokens
from mmspubench.eval.replies.summary import check_section, replies_section, truncated_line
from mmspubench.eval.results import read_samples

OPTIONS = ("a red car", "a blue bus", "a green bike", "a yellow taxi")


class StandInJudge:
    """A judge that names ``letter`` and counts what it was asked."""

    identity: Mapping[str, str] = {"model": "stand-in"}

    def __init__(self, letter: str | None) -> None:
        self.letter = letter
        self.asked: list[str] = []
        self.last_reply: str | None = None

    def read(self, question: str, options: Sequence[str], answer_text: str) -> str | None:
        self.asked.append(answer_text)
        self.last_reply = f" {self.letter or 'None'}."  # as a judge says it, read by the rule
        return self.letter


def test_the_parser_reads_first_and_names_its_rule() -> None:
    judge = StandInJudge("D")
    assert read_reply(Split(None, "(B) a blue bus", False), OPTIONS, False, judge) == Reading(
        "B", "parser", "letter+text"
    )
    assert read_reply(Split("think", "Answer: C", False), OPTIONS, True, judge) == Reading(
        "C", "parser", "final-answer"
    )
    assert judge.asked == []  # never asked where the parser read a letter


def test_the_judge_is_asked_only_where_the_parser_reads_nothing_and_the_reply_was_not_cut() -> None:
    judge: Judge = StandInJudge("C")
    said = read_reply(Split(None, "I would go with the bike.", False), OPTIONS, False, judge, "Which?")
    assert said == Reading("C", "judge", None, " C.")  # the judge's reply kept as said
    assert read_reply(Split("B is likely", "", True), OPTIONS, False, judge) == Reading(None, "none", None)
    assert read_reply(Split("B", "", False), OPTIONS, False, judge) == Reading(None, "none", None)
    assert StandInJudge(None).read("q", OPTIONS, "x") is None
    assert read_reply(Split(None, "no idea", False), OPTIONS, False, StandInJudge(None)) == Reading(
        None, "none", None, " None."
    )
    assert judge.asked == ["I would go with the bike."]
    with pytest.raises(MMSpuBenchError, match="the judge answered 'E'; expected one of A, B, C, D or none"):
        read_reply(Split(None, "no idea", False), OPTIONS, False, StandInJudge("E"))


def _line(**more: Any) -> dict[str, Any]:
    base = {
        "id": "000001",
        "types": ["background"],
        "answer": "B",
        "prediction": "B",
        "correct": True,
        "raw_output": "<think>A?</think> B",
        "option_scores": None,
        "class_name": "bus",
        "conditions": [],
        "cgla_min": None,
        "cgla_acc": None,
    }
    return {**base, **more}


def test_a_reading_writes_only_what_the_line_does_not_already_say() -> None:
    plain = ReplyReading("B", "parser", tokens=Tokens(10, 1, None))
    assert plain.to_json("B", " B\n") == {"tokens": {"prompt": 10, "completion": 1}}
    assert ReplyReading("no idea", "none").to_json(None, "no idea") == {}
    thought = ReplyReading("B", "parser", "A?", tokens=Tokens(10, 8, 4), seconds=0.5)
    assert thought.to_json("B", "<think>A?</think> B") == {
        "reasoning": "A?",
        "answer_text": "B",
        "read_by": "parser",
        "tokens": {"prompt": 10, "completion": 8, "reasoning": 4},
        "seconds": 0.5,
    }
    cut = ReplyReading("", "none", "A?", truncated=True)
    assert cut.to_json(None, "<think>A?") == {
        "reasoning": "A?",
        "answer_text": "",
        "truncated": True,
        "read_by": "none",
    }


def test_a_sample_line_with_reasoning_round_trips() -> None:
    line = _line(
        reasoning="A?", answer_text="B", read_by="parser", tokens={"prompt": 3, "completion": 2}, seconds=1
    )
    sample = SampleResult.from_json(line)
    assert sample.reading == ReplyReading("B", "parser", "A?", False, Tokens(3, 2, None), 1.0)
    assert SampleResult.from_json(json.loads(json.dumps(sample.to_json()))) == sample
    old = SampleResult.from_json(_line(raw_output="B"))
    assert old.reading is None and "read_by" not in old.to_json()  # a line of before reads as it was


@pytest.mark.parametrize(
    ("more", "said"),
    [
        ({"tokens": {"prompt": -1}}, "field 'tokens.prompt' must be a count"),
        ({"tokens": {"prompt": "10"}}, "field 'tokens.prompt' must be a count"),
        ({"tokens": {"prompt": True}}, "field 'tokens.prompt' must be a count"),
        ({"tokens": {"completion": 2, "reasoning": 3}}, "field 'tokens.reasoning' is 3, more than"),
        ({"tokens": {"cost": 3}}, "field 'tokens': unknown key 'cost'"),
        ({"tokens": []}, "field 'tokens' must be an object"),
        ({"seconds": -0.5}, "field 'seconds' must be a number of seconds"),
        ({"seconds": "1"}, "field 'seconds' must be a number of seconds"),
        ({"seconds": float("nan")}, "field 'seconds' must be a number of seconds >= 0, got nan"),
        ({"seconds": float("inf")}, "field 'seconds' must be a number of seconds >= 0, got inf"),
        ({"seconds": True}, "field 'seconds' must be a number of seconds"),
        ({"tokens": {"completion": 2.5}}, "field 'tokens.completion' must be a count"),
        ({"tokens": {}}, "field 'tokens' must be an object of token counts"),
        (
            {"prediction": "B", "truncated": True},
            "field 'read_by' is missing; an answer with reasoning or truncated records it",
        ),
        ({"reasoning": "A?"}, "field 'read_by' is missing; an answer with reasoning or truncated"),
        (
            {"read_by": "judge", "prediction": None, "correct": False},
            "field 'read_by' is 'judge' but the prediction is None",
        ),
        ({"judge": ["B"]}, "field 'judge' must be the judge's reply (a string), got list"),
        ({"truncated": False}, "field 'truncated' must be true (or absent)"),
        ({"truncated": 1}, "field 'truncated' must be true (or absent)"),
        ({"read_by": "oracle"}, "field 'read_by' must be one of parser, judge, none"),
        ({"read_by": "none"}, "field 'read_by' is 'none' but the prediction is 'B'"),
        ({"truncated": True, "read_by": "parser"}, "and the reply truncated"),
        ({"reasoning": 5}, "field 'reasoning' must be a string"),
        ({"answer_text": None}, "field 'answer_text' must be a string"),
        (
            {"raw_output": None, "option_scores": [0, 0, 0, 0], "seconds": 1},
            "'seconds' is set on an answer without",
        ),
    ],
)
def test_a_bad_reading_field_is_one_line_naming_file_record_and_field(
    tmp_path: Path, more: dict[str, Any], said: str
) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(_line(**more)) + "\n")
    with pytest.raises(MMSpuBenchError) as err:
        read_samples(path)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and "record '000001'" in text and said in text


def test_a_bad_reading_of_a_views_answer_names_its_field(tmp_path: Path) -> None:
    blind = {
        "prediction": "B",
        "correct": True,
        "raw_output": "B",
        "option_scores": None,
        "tokens": {"prompt": -2},
    }
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(_line(blind=blind)) + "\n")
    with pytest.raises(MMSpuBenchError, match=r"field 'blind\.tokens\.prompt' must be a count"):
        read_samples(path)


def _sample(
    prediction: str | None, answer: str, reading: ReplyReading | None, raw: str = "x"
) -> SampleResult:
    return SampleResult(
        "1",
        ("background",),
        answer,
        prediction,
        prediction == answer,
        raw,
        None,
        "car",
        (),
        None,
        None,
        reading=reading,
    )


def test_the_replies_section_by_hand() -> None:
    samples = [
        _sample("A", "A", ReplyReading("A", "parser", "r", tokens=Tokens(10, 20, 15))),
        _sample("B", "A", ReplyReading("B", "judge", tokens=Tokens(10, 30, None))),
        _sample(None, "A", ReplyReading("", "none", "r", truncated=True, tokens=Tokens(10, 50, 50))),
        _sample(None, "A", None, raw="no idea"),  # a line of before: read by nobody, uncounted
    ]
    section = replies_section(samples)
    assert section == {
        "n": 4,
        "parsed": 1,
        "judged": 1,
        "unparsed": 1,
        "truncated": 1,
        "share": {"parser": 25.0, "judge": 25.0, "none": 50.0, "truncated": 25.0},
        "tokens": {
            "prompt": {"total": 30, "mean": 10.0, "counted": 3},
            "completion": {"total": 100, "mean": 100 / 3, "counted": 3},
            "reasoning": {"total": 65, "mean": 32.5, "counted": 2},
        },
        "tokens_per_correct": None,  # one reply's completion was not counted
    }
    assert check_section(section, "results.json") == section
    assert replies_section(samples[:3])["tokens_per_correct"] == 100.0
    assert replies_section([_sample("A", "A", None, raw=None)]) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"parsed": 2}, "do not sum to it"),
        ({"n": -1}, "field 'replies.n' must be a count"),
        ({"share": {"parser": 101}}, "field 'replies.share'"),
        ({"tokens": {"prompt": None}}, "field 'replies.tokens'"),
        ({"tokens_per_correct": "many"}, "field 'replies.tokens_per_correct'"),
        ({"extra": 1}, "must be an object with keys"),
    ],
)
def test_a_bad_replies_section_is_refused_when_read(edit: dict[str, Any], said: str) -> None:
    section = replies_section([_sample("A", "A", ReplyReading("A", "parser"))])
    assert section is not None
    with pytest.raises(MMSpuBenchError, match=said):
        check_section({**section, **edit}, "results.json")


def test_the_truncated_line_only_above_the_limit() -> None:
    section = {"n": 20, "truncated": 2}
    assert truncated_line(section, 0.1) is None  # 10% is not above 10%
    line = truncated_line(section, 0.05)
    assert line == (
        "warning: 2 of 20 replies (10.0%, above --max-truncated 0.05) were cut inside their reasoning "
        "by the token budget and counted wrong; raise --max-new-tokens"
    )
    assert truncated_line(None, 0.0) is None and truncated_line({"n": 0, "truncated": 0}, 0.0) is None
