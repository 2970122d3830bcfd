"""Confounds the synthetic twin can plant besides the spurious cue: a letter bias and a text prior.

They are positive controls for the confound views of ``eval`` (circular evaluation, the blind
baseline): a model trained on such data should show the confound, and those views should expose it.

- **Letter bias** (``letter_bias=("A", 0.9)``): the gold answer of each item sits at letter ``A``
  with probability 0.9, else at one of the other three letters with equal probability. The draw
  uses a stream of its own (``(seed, LETTER_SALT, index)``), so an item differs from the item
  generated without the option only in the order of its options and its answer letter.
- **Text prior** (``text_prior_types=("background", ...)``): every item with at least one of these
  spurious types carries the class name in its question (``TEXT_PRIOR_WORDING``), so the question
  answers itself without the image on those types. The other items' questions are unchanged.

Neither option consumes a draw of the item's main stream: without them (the default) every item
is byte-identical to what the generator wrote before they existed.
"""

from __future__ import annotations

import numpy as np
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, TYPE_NAMES
from mmspubench.errors import MMSpuBenchError

LETTER_SALT = 4
"""Salt of the letter-bias stream (1-3 are the generator's block permutations)."""

TEXT_PRIOR_WORDING = "{question} Its label reads: {class_name}."
"""How a question names the class on a text-prior type."""


def check_letter_bias(letter_bias: object) -> tuple[str, float]:
    """``(letter, share)`` validated: a letter among A-D and a share in [0, 1]."""
    if not isinstance(letter_bias, tuple) or len(letter_bias) != 2:
        raise MMSpuBenchError(f"synth: letter bias {letter_bias!r}: expected (letter, share)")
    letter, share = letter_bias
    if letter not in ANSWER_LETTERS:
        raise MMSpuBenchError(
            f"synth: letter bias {letter!r}: expected a letter among {', '.join(ANSWER_LETTERS)}"
        )
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0.0 <= share <= 1.0:
        raise MMSpuBenchError(f"synth: letter bias share {share!r}: expected a number in [0, 1]")
    return letter, float(share)


def parse_letter_bias(text: str) -> tuple[str, float]:
    """``"A:0.9"`` -> ``("A", 0.9)`` (the letter case-insensitive); a bad text is one clear error."""
    letter, sep, share = text.partition(":")
    try:
        number = float(share)
    except ValueError:
        number = float("nan")
    if not sep or not np.isfinite(number):
        raise MMSpuBenchError(f"synth: --letter-bias {text!r}: expected LETTER:SHARE, e.g. A:0.9")
    return check_letter_bias((letter.strip().upper(), number))


def check_types(what: str, types: object) -> tuple[str, ...]:
    """Distinct canonical spurious type names (``what`` names the option in the error line)."""
    chosen = tuple(types) if isinstance(types, list | tuple) else ()
    unknown = [t for t in chosen if t not in TYPE_NAMES]
    if unknown or not chosen or len(set(chosen)) != len(chosen):
        raise MMSpuBenchError(
            f"synth: {what} {list(chosen) if chosen else types!r}: "
            f"expected distinct names among {', '.join(TYPE_NAMES)}"
        )
    return chosen


def biased_slot(seed: int, index: int, letter_bias: tuple[str, float]) -> int:
    """Position of the gold option of item ``index`` under the letter bias."""
    letter, share = letter_bias
    favoured = ANSWER_LETTERS.index(letter)
    rng = np.random.default_rng([seed, LETTER_SALT, index])
    if rng.random() < share:
        return favoured
    others = [slot for slot in range(len(ANSWER_LETTERS)) if slot != favoured]
    return others[int(rng.integers(len(others)))]


def with_text_prior(
    question: str, class_name: str, types: tuple[str, ...], prior_types: tuple[str, ...] | None
) -> str:
    """The question, naming the class when one of the item's ``types`` is among ``prior_types``."""
    if prior_types is None or not any(t in prior_types for t in types):
        return question
    return TEXT_PRIOR_WORDING.format(question=question, class_name=class_name)
