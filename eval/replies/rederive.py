"""A recorded answer read again from its ``raw_output``, as ``submit`` checks every answer.

The reply is split again by the run's reasoning style (results.json ``model.reasoning_style``;
``none`` when absent, as in every run without reasoning) and must give the recorded answer text;
then the recorded path must give the recorded prediction: ``parser`` the parser's letter,
``none`` nothing (a truncated reply: never read), ``judge`` a letter where the parser reads none,
accepted only in a run that records its judge.
"""

from __future__ import annotations

from collections.abc import Sequence

from mmspubench.eval.protocol import Generation
from mmspubench.eval.replies.parse import answer_parser
from mmspubench.eval.replies.reasoning import STYLES, split_reply
from mmspubench.eval.replies.record import ReplyReading


def answer_texts(raw_output: str, reasoning: str | None, style: str) -> set[str]:
    """The answer texts ``raw_output`` splits into under ``style`` (both ``think`` readings: the
    prompt may have opened the block), with and without the server's reasoning apart."""
    styles = {style, "think-open"} if style in ("think", "think-open") else {style}
    if style not in STYLES:
        return set()
    return {
        split_reply(Generation(raw_output, reasoning=server), s).answer_text
        for s in styles
        for server in {None, reasoning}
    }


def rederive_fault(
    prediction: str | None,
    raw_output: str,
    reading: ReplyReading,
    options: Sequence[str],
    final_answer: bool,
    style: str,
    judge_recorded: bool,
) -> tuple[str, str] | None:
    """``(field, why)`` where the recorded answer is not what its raw output reads as, else ``None``."""
    if reading.answer_text not in answer_texts(raw_output, reading.reasoning, style) and not (
        reading.truncated and reading.answer_text == ""
    ):
        return (
            "answer_text",
            f"{reading.answer_text[:40]!r} is not what raw_output splits into ({style} style)",
        )
    parsed = None if reading.truncated else answer_parser(final_answer)(reading.answer_text, options)
    if reading.read_by == "judge":
        if not judge_recorded:
            return "read_by", "read by a judge, but the run records no judge"
        if parsed is not None:
            return "read_by", f"read by a judge, but the parser reads {parsed!r}"
        return None
    if prediction != parsed:
        text = "raw_output" if reading.answer_text == raw_output.strip() else "answer text"
        return "prediction", f"{prediction!r} but its {text} reads as {parsed!r}"
    return None
