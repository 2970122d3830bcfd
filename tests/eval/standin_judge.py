"""A stand-in judge for ``--extract judge``: rules, not a language model, behind the stand-in server.

:func:`standin_verdict` reads an answer text the way a careful but literal reader might, with three
rules, and answers what a judge should (a letter or ``none``); it is a rule-based stand-in so that
the judge path can be tested and measured on 127.0.0.1 without a model. It is NOT a real LLM judge:
the figures it gives (bench/reply_reading.py ``--judge standin``) measure the judge path's plumbing
and this rule set, not any model.

1. Letters named: a standalone ``A``-``D`` (any case; ``A``/``a`` followed by a word other than
   ``or``, ``and``, ``is`` is the article, not a letter).
2. Options named: an option's text (lower case, a leading ``a``/``an``/``the`` dropped) found as
   whole words in the answer.
3. One letter named: that letter (it wins over option texts); no letter and one option text: that
   option; anything else (no letter and no text, two letters, two texts): ``none``.

:func:`judge_server` is a :class:`~tests.eval.standin_server.StandInServer` that answers the judge
prompt of :mod:`mmspubench.eval.replies.judge` with this verdict (``mode="rules"``), or always
``junk`` text (``mode="junk"``), or ``none``; the server's ``policy`` gives 500s (``"500"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from tests.eval.standin_server import StandInServer

_LETTER = re.compile(r"(?<![A-Za-z0-9'’])([A-Da-d])(?![A-Za-z0-9'’])")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+")
_NOT_NOUNS = ("or", "and", "is")
"""Words after which ``A`` is a letter, not the article (``A or B``, ``A is right``)."""
JUNK = "I think the answer is most likely C."
"""What the ``junk`` judge answers: neither a bare letter nor ``none``."""


def _letters(text: str) -> set[str]:
    found = set()
    for match in _LETTER.finditer(text):
        after = text[match.end() :]
        word = re.match(r"\s+([A-Za-z]+)", after)
        if match.group(1) in "Aa" and word and word.group(1).lower() not in _NOT_NOUNS:
            continue  # "A red car", "a dog": the article
        found.add(match.group(1).upper())
    return found


def _texts(text: str, options: Sequence[str]) -> set[str]:
    lowered = text.lower()
    found = set()
    for letter, option in zip("ABCD", options, strict=False):
        words = _ARTICLE.sub("", option.strip().lower())
        if words and re.search(r"(?<![a-z0-9])" + re.escape(words) + r"(?![a-z0-9])", lowered):
            found.add(letter)
    return found


def standin_verdict(answer_text: str, options: Sequence[str]) -> str:
    """The stand-in's answer to a judge request: ``A``-``D`` or ``none`` (module doc: the rules)."""
    letters, texts = _letters(answer_text), _texts(answer_text, options)
    if len(letters) == 1:
        return next(iter(letters))
    if not letters and len(texts) == 1:
        return next(iter(texts))
    return "none"


def judge_request(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The answer text and the options of a judge request (the prompt of ``judge_messages``)."""
    user = body["messages"][-1]["content"]
    head, _, rest = user.partition("\nAnswer given:\n<<<\n")
    answer = rest[: rest.rindex("\n>>>\n")]
    lines = head.partition("\nOptions:\n")[2].splitlines()
    return answer, [line[3:] for line in lines]


def answer_of(mode: str) -> Callable[[dict[str, Any]], str]:
    """The server's answer to a judge request under ``mode``: ``rules``, ``junk`` or ``none``."""

    def answer(body: dict[str, Any]) -> str:
        if mode == "junk":
            return JUNK
        if mode == "none":
            return "none"
        return standin_verdict(*judge_request(body))

    return answer


def judge_server(mode: str = "rules", policy: Callable[[int], str] = lambda n: "ok") -> StandInServer:
    """A stand-in judge on 127.0.0.1 (``with judge_server() as server: ... server.base_url``)."""
    return StandInServer(policy=policy, answer_of=answer_of(mode))
