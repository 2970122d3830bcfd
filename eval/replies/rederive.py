"""A recorded answer read again from its ``raw_output``, as ``submit`` checks every answer.

The reply is split again by the run's reasoning style (results.json ``model.reasoning_style``;
``none`` when absent, as in every run without reasoning) and must give the recorded answer text
(and a ``truncated`` answer must be a reply cut inside its reasoning: :func:`cut_inside`); then the recorded path must give the recorded prediction: ``parser`` the parser's letter,
``none`` nothing (a truncated reply: never read), ``judge`` a letter where the parser reads none,
accepted only in a run that records its judge (:func:`run_judge_fault`: ``config.extract`` judge,
its model, base URL and prompt version, and results.json's ``judge`` the same) and only where the
recorded verdict (the sample's ``judge``: the judge's reply) reads again, by the same rule
(:func:`~mmspubench.eval.replies.judge.read_verdict`), as the recorded letter. A verdict is kept
only where the judge was asked: never beside a parser's letter, never in a run without a judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.protocol import Generation
from mmspubench.eval.replies.parse import answer_parser
from mmspubench.eval.replies.reasoning import STYLES, split_reply
from mmspubench.eval.replies.record import ReplyReading
from mmspubench.redact import clean

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig


def run_style(style: Any, where: str) -> str:
    """A run's recorded style (results.json ``model.reasoning_style``, ``none`` when absent), one of
    :data:`~mmspubench.eval.replies.reasoning.STYLES`: a style no reply is split by is refused in
    one line naming results.json's field, not blamed on the first sample it fails to read."""
    if style not in STYLES:
        raise MMSpuBenchError(
            f"{where}: field 'model.reasoning_style': {clean(repr(style))[:60]}; expected one of {', '.join(STYLES)}"
        )
    return str(style)


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


def cut_inside(raw_output: str, reasoning: str | None, style: str) -> bool:
    """Whether ``raw_output`` can be a reply cut inside its reasoning under ``style`` (rule 2 of
    :mod:`~mmspubench.eval.replies.reasoning`): split as truncated, or reasoning with nothing
    after it (the budget ended there; the finish reason is not recorded)."""
    styles = {style, "think-open"} if style in ("think", "think-open") else {style}
    if style not in STYLES:
        return False
    splits = [
        split_reply(Generation(raw_output, reasoning=server, finish_reason="length"), s)
        for s in styles
        for server in {None, reasoning}
    ]
    return any(split.truncated for split in splits)


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
    if reading.truncated and not cut_inside(raw_output, reading.reasoning, style):
        return "truncated", f"true, but raw_output is not cut inside its reasoning ({style} style)"
    if reading.answer_text not in answer_texts(raw_output, reading.reasoning, style):
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
        return _verdict_fault(prediction, reading, len(options))
    if reading.judge is not None:
        if not judge_recorded:
            return "judge", "a judge's verdict is recorded, but the run records no judge"
        if parsed is not None or reading.truncated:
            why = "the reply was truncated" if reading.truncated else f"the parser reads {parsed!r}"
            return (
                "judge",
                f"a judge's verdict is recorded, but {why} (the judge is asked only where the parser reads nothing)",
            )
        return _verdict_fault(prediction, reading, len(options))
    if prediction != parsed:
        text = "raw_output" if reading.answer_text == raw_output.strip() else "answer text"
        return "prediction", f"{prediction!r} but its {text} reads as {parsed!r}"
    return None


def _verdict_fault(prediction: str | None, reading: ReplyReading, n_options: int) -> tuple[str, str] | None:
    """An answer the judge was asked about: its recorded verdict must read again as its letter
    (``None``: the judge said none, or junk)."""
    from mmspubench.eval.replies.judge import read_verdict

    if reading.judge is None:
        return "judge", "read by a judge, but the judge's verdict is missing"
    letter = read_verdict(reading.judge, n_options).letter
    if letter != prediction:
        return (
            "judge",
            f"the judge's verdict {reading.judge[:40]!r} reads as {letter!r}, but the prediction is {prediction!r}",
        )
    return None


def run_judge_fault(config: RunConfig, recorded: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(field, why)`` where a run's judge is not fully recorded: with ``config.extract`` judge, its
    model, base URL and this package's prompt version in the config, and results.json's ``judge``
    (``recorded``) naming the same; without it, no ``judge`` in results.json. ``None``: consistent."""
    from mmspubench.eval.replies.judge import JUDGE_PROMPT_VERSION, judge_record

    if getattr(config, "extract", "parser") != "judge":
        return (
            None
            if recorded is None
            else ("judge", f"a judge is recorded, but config.extract is {config.extract!r}")
        )
    for name in ("judge_model", "judge_base_url"):
        if not getattr(config, name):
            return f"config.{name}", "missing in a run read by a judge (--extract judge)"
    if config.judge_prompt != JUDGE_PROMPT_VERSION:
        return (
            "config.judge_prompt",
            f"{config.judge_prompt!r} is not this package's judge prompt {JUDGE_PROMPT_VERSION!r}",
        )
    expected = judge_record(config) or {}
    if recorded is None:
        return "judge", "missing in a run read by a judge (--extract judge)"
    for key in ("model", "base_url", "prompt_version"):
        if recorded.get(key) != expected.get(key):
            return f"judge.{key}", f"{recorded.get(key)!r} but the run's config gives {expected.get(key)!r}"
    return None
