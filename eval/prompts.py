"""Versioned prompt templates: the CGLA prompt g(t) and the multiple-choice prompt.

Every text here is written into results.json (``config.prompts``) together with
``PROMPT_VERSION``; change the version whenever a text changes, so results made with different
prompts are never compared silently.

Layout for a shared prefix: the image comes first in the user turn, then the fixed instruction,
and only then the attribute text. All conditions of one item therefore share the system turn,
the image and the instruction as one token prefix, which the fast scorer encodes once; only the
attribute, the end of the turn, the assistant prefix and the continuation differ.

Leading space: the continuation carries the space that separates it from the assistant prefix
(``"The object is:"`` + ``" cat"``). Word-piece tokenizers (BPE with ``Ġ``, SentencePiece with
``▁``) glue a space to the word after it, so with the space on the continuation side the tokens
of the context stay a prefix of the tokens of context + continuation; a context ending in a space
would tokenize that space alone and the property would break. The same holds for the option
letters in ``logprob`` mode (``"Answer:"`` + ``" B"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, NUM_OPTIONS
from mmspubench.eval.protocol import ChatPrompt

PROMPT_VERSION = "1"
"""Version of every template below; bump it when any text changes."""

SYSTEM = "You are a helpful assistant."
"""System message of both prompts."""

CGLA_USER = (
    "What is the main object in this image? Answer with its class name only. "
    "One attribute of the object: {attribute}"
)
"""User text of g(t); ``{attribute}`` is the core or spurious attribute text, kept last."""
CGLA_ASSISTANT_PREFIX = "The object is:"
"""Assistant prefix of g(t); the class name is scored right after it."""
CGLA_CONTINUATION = " {class_name}"
"""The scored continuation c: the class name with one leading space (see module docstring)."""

MCQ_USER = "{question}\n{options}\nAnswer with the option's letter from the given choices directly."
"""User text of the multiple-choice prompt; ``{options}`` is one ``A. text`` line per option."""
MCQ_OPTION_LINE = "{letter}. {text}"
"""One option line of ``MCQ_USER``."""
MCQ_GENERATE_PREFIX = ""
"""Assistant prefix in ``generate`` mode: the model answers freely, then the parser reads it."""
MCQ_LOGPROB_PREFIX = "Answer:"
"""Assistant prefix in ``logprob`` mode; the continuations are the option letters."""
MCQ_LETTER_CONTINUATION = " {letter}"
"""Continuation of one option letter in ``logprob`` mode."""


def cgla_prompt(attribute: str) -> ChatPrompt:
    """g(t): the CGLA prompt for one attribute text."""
    return ChatPrompt(
        system=SYSTEM,
        user_text=CGLA_USER.format(attribute=attribute),
        assistant_prefix=CGLA_ASSISTANT_PREFIX,
    )


def cgla_continuation(class_name: str) -> str:
    """The exact continuation scored for a class name."""
    return CGLA_CONTINUATION.format(class_name=class_name)


def mcq_prompt(question: str, options: Sequence[str], answer_mode: str) -> ChatPrompt:
    """The multiple-choice prompt: question, lettered options, instruction, mode's assistant prefix."""
    if len(options) != NUM_OPTIONS:
        raise ValueError(f"expected {NUM_OPTIONS} options, got {len(options)}")
    if answer_mode not in ("generate", "logprob"):
        raise ValueError(f"answer mode must be 'generate' or 'logprob', got {answer_mode!r}")
    lines = "\n".join(
        MCQ_OPTION_LINE.format(letter=letter, text=text)
        for letter, text in zip(ANSWER_LETTERS, options, strict=True)
    )
    prefix = MCQ_GENERATE_PREFIX if answer_mode == "generate" else MCQ_LOGPROB_PREFIX
    return ChatPrompt(
        system=SYSTEM, user_text=MCQ_USER.format(question=question, options=lines), assistant_prefix=prefix
    )


def letter_continuations() -> tuple[str, ...]:
    """The four continuations scored in ``logprob`` mode, in ``A``..``D`` order."""
    return tuple(MCQ_LETTER_CONTINUATION.format(letter=letter) for letter in ANSWER_LETTERS)


def prompt_spec() -> dict[str, Any]:
    """Every template with its version, as written into results.json ``config.prompts``."""
    return {
        "version": PROMPT_VERSION,
        "system": SYSTEM,
        "cgla": {
            "user": CGLA_USER,
            "assistant_prefix": CGLA_ASSISTANT_PREFIX,
            "continuation": CGLA_CONTINUATION,
        },
        "mcq": {
            "user": MCQ_USER,
            "option_line": MCQ_OPTION_LINE,
            "generate_prefix": MCQ_GENERATE_PREFIX,
            "logprob_prefix": MCQ_LOGPROB_PREFIX,
            "letter_continuation": MCQ_LETTER_CONTINUATION,
        },
    }
