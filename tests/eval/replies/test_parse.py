from __future__ import annotations

import pytest
from mmspubench.eval.replies.parse import RULES, parse_answer, parse_answer_rule

OPTIONS = ["a red car", "a blue bus", "a green bike", "a yellow taxi"]

# (generated text, options, expected letter or None)
CASES: list[tuple[str, list[str], str | None]] = [
    ("B", OPTIONS, "B"),
    ("(B)", OPTIONS, "B"),
    ("B.", OPTIONS, "B"),
    ("B)", OPTIONS, "B"),
    ("B:", OPTIONS, "B"),
    ("  C \n", OPTIONS, "C"),
    ("Answer: B", OPTIONS, "B"),
    ("answer: (D)", OPTIONS, "D"),
    ("The answer is A.", OPTIONS, "A"),
    ("Answer:C", OPTIONS, "C"),
    ("a blue bus", OPTIONS, "B"),
    ("A Blue Bus.", OPTIONS, "B"),
    ("Answer: a green bike", OPTIONS, "C"),
    ("B. a blue bus", OPTIONS, "B"),
    ("(D) a yellow taxi", OPTIONS, "D"),
    # Not parsed: never guessed.
    ("", OPTIONS, None),
    ("b", OPTIONS, None),
    ("E", OPTIONS, None),
    ("B or C", OPTIONS, None),
    ("B. because it is blue", OPTIONS, None),
    ("B. a red car", OPTIONS, None),  # letter and text disagree: only B names nothing
    ("I think it is B", OPTIONS, None),
    ("a blue", OPTIONS, None),
    ("BC", OPTIONS, None),
    # Ambiguous: two letters named.
    ("B", ["cat", "dog", "B", "cow"], None),
    ("dog", ["cat", "dog", "Dog", "cow"], None),
    # A letter form followed by its own text that is itself a letter.
    ("A. B", ["B", "cat", "dog", "cow"], "A"),
]


@pytest.mark.parametrize(("text", "options", "expected"), CASES)
def test_parse_answer(text: str, options: list[str], expected: str | None) -> None:
    assert parse_answer(text, options) == expected


@pytest.mark.parametrize(("text", "options", "expected"), CASES)
def test_the_rule_reading_gives_the_same_letter(text: str, options: list[str], expected: str | None) -> None:
    letter, rule = parse_answer_rule(text, options)
    assert letter == expected
    assert (rule is None) == (letter is None)
    assert rule is None or rule in RULES


# (generated text, options, letter, the rule that named it)
RULE_CASES: list[tuple[str, list[str], str | None, str | None]] = [
    ("B", OPTIONS, "B", "letter"),
    ("(C).", OPTIONS, "C", "letter"),
    ("The answer is D", OPTIONS, "D", "letter"),
    ("B. a blue bus", OPTIONS, "B", "letter+text"),
    ("Answer: (A) a red car.", OPTIONS, "A", "letter+text"),
    ("a green bike", OPTIONS, "C", "option-text"),
    ("The answer is A Yellow Taxi.", OPTIONS, "D", "option-text"),
    # One letter named by two rules (option A's text is the letter A): the first rule in order.
    ("A", ["A", "cat", "dog", "cow"], "A", "letter"),
    ("B or C", OPTIONS, None, None),
    ("B", ["cat", "dog", "B", "cow"], None, None),  # two letters named: no rule reported
]


@pytest.mark.parametrize(("text", "options", "letter", "rule"), RULE_CASES)
def test_parse_answer_rule_names_the_rule(
    text: str, options: list[str], letter: str | None, rule: str | None
) -> None:
    assert parse_answer_rule(text, options) == (letter, rule)
