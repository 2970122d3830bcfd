"""The answer parser of ``generate`` mode: generated text -> option letter, or ``None``.

Rules, applied to the whole generated text (never to a part of it, so nothing is guessed):

1. Surrounding whitespace is dropped, then one leading ``Answer:``, ``Answer is``, ``The answer
   is`` (any case, colon optional), then whitespace and one trailing period again.
2. A letter form names an option: ``B``, ``(B)``, ``B.``, ``B)``, ``B:`` -- the letter in upper
   case, alone.
3. A letter form followed by that option's text names it too: ``B. a red car``, ``(B) a red car``.
   Followed by any other text (``B. because ...``) it names nothing.
4. The option's text alone names it: exact match, case-insensitive, e.g. ``a red car``.

When the rules name exactly one letter, that letter is the answer. When they name none, or two
different letters (``B`` while option C's text is ``B``; two options with the same text), the
answer is unparsed: ``None``. Unparsed answers are counted, reported and scored wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from mmspubench.dataset_builder.schema import ANSWER_LETTERS

_LETTERS = "".join(ANSWER_LETTERS)
_LEAD = re.compile(r"^(?:the\s+answer\s+is|answer\s+is|answer)\s*:?\s*", re.IGNORECASE)
_LETTER_ONLY = re.compile(rf"^(?:\(([{_LETTERS}])\)|([{_LETTERS}])[.:)]?)$")
_LETTER_TEXT = re.compile(rf"^(?:\(([{_LETTERS}])\)|([{_LETTERS}])[.:)])\s+(.+)$", re.DOTALL)


def _normalise(text: str) -> str:
    body = _LEAD.sub("", text.strip(), count=1).strip()
    return body[:-1].rstrip() if body.endswith(".") and len(body) > 1 else body


def _same_text(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


RULES = ("letter", "letter+text", "option-text")
"""The rules that can name a letter, in the module doc's order (2, 3, 4)."""


def parse_answer_rule(text: str, options: Sequence[str]) -> tuple[str | None, str | None]:
    """The option letter named by ``text`` and the rule that named it (:data:`RULES`; the first
    in that order when several name the same letter), or ``(None, None)`` (module doc)."""
    letters = ANSWER_LETTERS[: len(options)]
    raw = _LEAD.sub("", text.strip(), count=1).strip()
    named: dict[str, set[str]] = {rule: set() for rule in RULES}
    for body in {raw, _normalise(text)}:
        only = _LETTER_ONLY.match(body)
        if only:
            named["letter"].add(only.group(1) or only.group(2))
        with_text = _LETTER_TEXT.match(body)
        if with_text:
            letter = with_text.group(1) or with_text.group(2)
            rest = with_text.group(3).rstrip(".")
            if letter in letters and _same_text(rest, options[letters.index(letter)]):
                named["letter+text"].add(letter)
        for letter, option in zip(letters, options, strict=True):
            if body and _same_text(body, option.rstrip(".")):
                named["option-text"].add(letter)
    candidates = set().union(*named.values()) & set(letters)
    if len(candidates) != 1:
        return None, None
    (letter,) = candidates
    return letter, next(rule for rule in RULES if letter in named[rule])


def parse_answer(text: str, options: Sequence[str]) -> str | None:
    """The option letter named by ``text``, or ``None`` when it names none or several (module doc)."""
    return parse_answer_rule(text, options)[0]


_FINAL = re.compile(r"\banswer\s*\**\s*:", re.IGNORECASE)


def parse_final_answer(text: str, options: Sequence[str]) -> str | None:
    """The ``reasoning`` variant's answer: what follows the LAST ``Answer:`` (any case), up to the
    end of its line, read by :func:`parse_answer`; ``None`` without such a line.

    Letters in the reasoning before it never count, and an earlier ``Answer:`` gives way to a later
    one. Markdown emphasis around the marker or the letter (``**Answer:** B``) is dropped.
    """
    markers = list(_FINAL.finditer(text))
    if not markers:
        return None
    line = text[markers[-1].end() :].split("\n", 1)[0].strip().strip("*").strip()
    return parse_answer(line, options) if line else None


def answer_parser(final_answer: bool) -> Callable[[str, Sequence[str]], str | None]:
    """The parser of a prompt variant: the final ``Answer:`` line, or the whole text."""
    return parse_final_answer if final_answer else parse_answer
