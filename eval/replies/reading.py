"""A split reply read into an answer: by the strict parser, else by a judge, else not at all.

:func:`read_reply` reads the answer from the split's ``answer_text`` only (never from the
reasoning). A truncated reply is never read (``read_by`` ``none``). The judge, when the run has
one, is asked only where the parser named nothing and the reply was not truncated.

``read_by`` (:data:`READ_PATHS`): ``parser`` (with the ``rule`` that named the letter, one of
:data:`~mmspubench.eval.replies.parse.RULES` or ``final-answer`` for the ``reasoning`` prompt
variant's ``Answer:`` line), ``judge`` or ``none`` (unparsed or truncated). Where the judge was
asked, its reply as it said it (:attr:`Judge.last_reply`) is kept as the reading's ``verdict``:
the evidence ``submit`` reads again (:mod:`~mmspubench.eval.replies.rederive`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.replies.parse import parse_answer_rule, parse_final_answer
from mmspubench.eval.replies.reasoning import Split

READ_PATHS = ("parser", "judge", "none")
"""How an answer was read (module doc)."""
FINAL_ANSWER = "final-answer"
"""The rule of the ``reasoning`` prompt variant's parser (the last ``Answer:`` line)."""


class Judge(Protocol):
    """A model asked to name the option a reply chose, where the parser named none."""

    identity: Mapping[str, str]
    """What identifies the judge (model, endpoint, prompt version): in the run's identity."""

    @property
    def last_reply(self) -> str | None:
        """The judge's reply to the last :meth:`read`, as kept (recorded in the sample); ``None``
        before any."""
        ...

    def read(self, question: str, options: Sequence[str], answer_text: str) -> str | None:
        """The letter (A-D) ``answer_text`` chose among ``options``, or ``None``."""
        ...


@dataclass(frozen=True, slots=True)
class Reading:
    """How a reply's answer was read."""

    prediction: str | None
    """The option letter read; ``None`` when none was (unparsed or truncated)."""
    read_by: str
    """``parser``, ``judge`` or ``none`` (:data:`READ_PATHS`)."""
    rule: str | None
    """The parser rule that named the letter; ``None`` unless ``read_by`` is ``parser``."""
    verdict: str | None = None
    """The judge's reply, where the judge was asked (``read_by`` ``judge`` or ``none``); else ``None``."""


def read_reply(
    split: Split,
    options: Sequence[str],
    final_answer: bool,
    judge: Judge | None,
    question: str = "",
) -> Reading:
    """The answer of ``split`` (module doc); ``final_answer``: the prompt variant asks for a final
    ``Answer:`` line; ``question`` is what the judge is shown with the options."""
    if split.truncated:
        return Reading(None, "none", None)
    if final_answer:
        letter, rule = parse_final_answer(split.answer_text, options), FINAL_ANSWER
    else:
        letter, rule = parse_answer_rule(split.answer_text, options)
    if letter is not None:
        return Reading(letter, "parser", rule)
    if judge is None or not split.answer_text.strip():
        return Reading(None, "none", None)
    said = judge.read(question, options, split.answer_text)
    verdict = judge.last_reply if judge.last_reply is not None else (said or "none")
    if said is None:
        return Reading(None, "none", None, verdict)
    if said not in ANSWER_LETTERS[: len(options)]:
        raise MMSpuBenchError(
            f"the judge answered {said!r}; expected one of {', '.join(ANSWER_LETTERS[: len(options)])} or none"
        )
    return Reading(said, "judge", None, verdict)
