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
from dataclasses import dataclass
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


# Prompt variants ------------------------------------------------------------------------------
# ``standard`` is the templates above, unchanged (PROMPT_VERSION). Each other variant changes only
# the texts it names and carries a version of its own; results.json records the variant's name,
# version and texts (``prompt_spec``), and the run identity holds the name.

STANDARD = "standard"
"""The default variant: today's templates, as the paper's protocol."""
CORE_FOCUS_SYSTEM = (
    "You are a helpful assistant. Identify an object by its intrinsic parts and shape only. "
    "Do not rely on the background, colour, texture, lighting or surrounding context: they can "
    "be misleading."
)
"""System text of ``core-focus``: judge the object by its own parts and shape."""
REASONING_USER = (
    "{question}\n{options}\nThink step by step about the object's own parts and shape, then end "
    "with a last line of the form 'Answer: <letter>'."
)
"""User text of ``reasoning``: the model reasons, then ends with ``Answer: <letter>``."""
ATTRIBUTE_HINT_USER = (
    "{question}\n{options}\nHint: the object has these features: {hint}.\n"
    "Answer with the option's letter from the given choices directly."
)
"""User text of ``attribute-hint``: the item's core attributes as a hint (a ceiling, not a fair run)."""
HINT_SEPARATOR = "; "
"""Joins the core attributes in ``{hint}``."""
CEILING_NOTE = "ceiling: the item's core attributes are given as a hint; not a fair run"
"""What every view of an ``attribute-hint`` run says about it."""


@dataclass(frozen=True, slots=True)
class PromptVariant:
    """One set of multiple-choice (and possibly CGLA) texts, with its version."""

    name: str
    """``--prompt-variant`` name."""
    version: str
    """Version of this variant's texts; bump it when one changes."""
    description: str
    """One line for ``--help`` and the README."""
    system: str = SYSTEM
    """System text of the prompts this variant applies to."""
    mcq_user: str = MCQ_USER
    """User text of the multiple-choice prompt (``{question}``, ``{options}``, maybe ``{hint}``)."""
    final_answer: bool = False
    """The answer is read from the final ``Answer: <letter>`` line (:func:`~mmspubench.eval.replies.parse.parse_final_answer`)."""
    generate_only: bool = False
    """Needs ``--answer-mode generate`` (the answer follows generated text)."""
    max_new_tokens: int = 16
    """The default ``--max-new-tokens`` of a run with this variant."""
    ceiling: bool = False
    """Gives the model information a fair run lacks: marked everywhere, refused by ``submit``."""
    cgla: bool = False
    """May be used as ``--cgla-prompt-variant`` (its system text goes into g(t); g(t)'s user text,
    prefix and continuation never change)."""

    def spec(self) -> dict[str, Any]:
        """The variant's name, version and texts, as results.json records them."""
        return {
            "name": self.name,
            "version": self.version,
            "system": self.system,
            "mcq_user": self.mcq_user,
            "final_answer": self.final_answer,
            "ceiling": self.ceiling,
        }


VARIANTS: dict[str, PromptVariant] = {
    v.name: v
    for v in (
        PromptVariant(STANDARD, PROMPT_VERSION, "the benchmark's prompts (the paper's protocol)", cgla=True),
        PromptVariant(
            "core-focus",
            "1",
            "a system instruction to judge the object by its parts and shape, not background, "
            "colour, texture, lighting or context",
            system=CORE_FOCUS_SYSTEM,
            cgla=True,
        ),
        PromptVariant(
            "reasoning",
            "1",
            "think step by step, end with 'Answer: <letter>' (the final one is read; generate mode; "
            "--max-new-tokens default 512)",
            mcq_user=REASONING_USER,
            final_answer=True,
            generate_only=True,
            max_new_tokens=512,
        ),
        PromptVariant(
            "attribute-hint",
            "1",
            "the item's core attributes given as a hint: a ceiling, not a fair run (submit refuses it)",
            mcq_user=ATTRIBUTE_HINT_USER,
            ceiling=True,
        ),
    )
}
"""Every ``--prompt-variant``, by name."""
CGLA_VARIANTS: tuple[str, ...] = tuple(name for name, v in VARIANTS.items() if v.cgla)
"""The ``--cgla-prompt-variant`` choices."""


def variant(name: str) -> PromptVariant:
    """The variant called ``name`` (names are checked by ``RunConfig.validate``)."""
    return VARIANTS[name]


def cgla_prompt(attribute: str, variant_name: str = STANDARD) -> ChatPrompt:
    """g(t): the CGLA prompt for one attribute text (``standard`` unless ``--cgla-prompt-variant``)."""
    return ChatPrompt(
        system=variant(variant_name).system,
        user_text=CGLA_USER.format(attribute=attribute),
        assistant_prefix=CGLA_ASSISTANT_PREFIX,
        scored=True,
    )


def cgla_continuation(class_name: str) -> str:
    """The exact continuation scored for a class name."""
    return CGLA_CONTINUATION.format(class_name=class_name)


def mcq_prompt(
    question: str,
    options: Sequence[str],
    answer_mode: str,
    variant_name: str = STANDARD,
    core_attributes: Sequence[str] = (),
) -> ChatPrompt:
    """The multiple-choice prompt: question, lettered options, instruction, mode's assistant prefix.

    ``variant_name`` picks the texts (:data:`VARIANTS`); ``core_attributes`` fill the hint of
    ``attribute-hint`` and are not used otherwise.
    """
    chosen = variant(variant_name)
    if len(options) != NUM_OPTIONS:
        raise ValueError(f"expected {NUM_OPTIONS} options, got {len(options)}")
    if answer_mode not in ("generate", "logprob"):
        raise ValueError(f"answer mode must be 'generate' or 'logprob', got {answer_mode!r}")
    lines = "\n".join(
        MCQ_OPTION_LINE.format(letter=letter, text=text)
        for letter, text in zip(ANSWER_LETTERS, options, strict=True)
    )
    prefix = MCQ_GENERATE_PREFIX if answer_mode == "generate" else MCQ_LOGPROB_PREFIX
    hint = HINT_SEPARATOR.join(core_attributes)
    if chosen.ceiling and not hint:
        raise ValueError("the attribute-hint prompt needs the item's core attributes")
    user = chosen.mcq_user.format(question=question, options=lines, hint=hint)
    return ChatPrompt(
        system=chosen.system, user_text=user, assistant_prefix=prefix, scored=answer_mode == "logprob"
    )


def letter_continuations() -> tuple[str, ...]:
    """The four continuations scored in ``logprob`` mode, in ``A``..``D`` order."""
    return tuple(MCQ_LETTER_CONTINUATION.format(letter=letter) for letter in ANSWER_LETTERS)


def prompt_spec(variant_name: str = STANDARD, cgla_variant: str = STANDARD) -> dict[str, Any]:
    """Every template with its version, as written into results.json ``config.prompts``.

    With the ``standard`` variants the object is exactly the one of every earlier release; another
    variant adds its name, version and texts under ``mcq_variant`` (``cgla_variant`` for g(t)).
    """
    spec = _standard_spec()
    if variant_name != STANDARD:
        spec["mcq_variant"] = variant(variant_name).spec()
    if cgla_variant != STANDARD:
        spec["cgla_variant"] = variant(cgla_variant).spec()
    return spec


def _standard_spec() -> dict[str, Any]:
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
