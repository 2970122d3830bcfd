"""The training sequences of the tiny model: each item's prompts rendered as eval renders them,
tokenized as eval's scorer tokenizes them (``mmspubench.eval.tiny.train`` learns from them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.protocol import ChatPrompt, ScoreRequest
from mmspubench.eval.tiny.tokenizer import END_OF_TURN

if TYPE_CHECKING:
    import torch
    from mmspubench.eval.backends.transformers.adapter import TransformersVLM
    from PIL.Image import Image


@dataclass(frozen=True, slots=True)
class Example:
    """One training sequence: an item's image, a rendered context and the continuation learned."""

    item: int
    """Index of the item (and of its image) in the training set."""
    kind: str
    """``mcq-generate``, ``mcq-logprob``, ``cgla-core`` or ``cgla-spurious``."""
    context: str
    """Exact prompt text given to the processor with the image (chat template applied)."""
    continuation: str
    """Text whose tokens carry the loss."""
    end_of_turn: bool = False
    """Whether the end-of-turn token follows the continuation (and carries loss too)."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """An example as token ids, with where its continuation starts."""

    item: int
    """Index of the item's pixel values."""
    ids: tuple[int, ...]
    """Token ids of context + continuation (image tokens expanded)."""
    start: int
    """Index of the first continuation token in ``ids``."""


REASONING = "<think>\nAnswer: ({decoy})\nNo, look again.\n</think>\n\n"
"""The reasoning block the thinking control writes before its answer (``--reasoning``): fixed
text around a DECOY, an option letter other than the gold one (:func:`decoy_letter`). A reader
that took the whole reply would find ``Answer: (A)`` there (the ``reasoning`` prompt variant's
final-answer line, a first-letter regex); eval reads only what follows ``</think>``."""


def decoy_letter(answer: str) -> str:
    """The reasoning's decoy: the first option letter that is not the gold ``answer``."""
    return next(letter for letter in ANSWER_LETTERS if letter != answer)


def reasoning_text(answer: str) -> str:
    """The reasoning block learned before the answer of an item whose gold letter is ``answer``."""
    return REASONING.format(decoy=decoy_letter(answer))


def examples_for(
    index: int,
    item: Item,
    render: Callable[[ChatPrompt], str],
    generate_answer: str = "option",
    reasoning: bool = False,
) -> list[Example]:
    """The training sequences of one item: both multiple-choice modes and every CGLA condition.

    ``render`` is the eval adapter's (chat template, generation prompt, assistant prefix; a
    thinking template renders the scored prompts with its empty reasoning block, as eval does);
    ``reasoning``: the generate-mode answer follows :func:`reasoning_text`.
    """
    if generate_answer not in ("option", "letter"):
        raise ValueError(f"generate_answer must be 'option' or 'letter', got {generate_answer!r}")
    answer = item.options[ANSWER_LETTERS.index(item.answer)] if generate_answer == "option" else item.answer
    out = [
        Example(
            index,
            "mcq-generate",
            render(prompts.mcq_prompt(item.question, item.options, "generate")),
            (reasoning_text(item.answer) if reasoning else "") + answer,
            end_of_turn=True,
        ),
        Example(
            index,
            "mcq-logprob",
            render(prompts.mcq_prompt(item.question, item.options, "logprob")),
            prompts.MCQ_LETTER_CONTINUATION.format(letter=item.answer),
        ),
    ]
    name = prompts.cgla_continuation(item.class_name)
    out += [Example(index, "cgla-core", render(prompts.cgla_prompt(t)), name) for t in item.core_attributes]
    out += [
        Example(index, "cgla-spurious", render(prompts.cgla_prompt(t)), name)
        for t in item.spurious_attributes
    ]
    return out


def encode(examples: Sequence[Example], adapter: TransformersVLM, images: Sequence[Image]) -> list[Encoded]:
    """Token ids of each example, tokenized by the eval adapter exactly as its scorer does.

    The continuation's tokens are those of context + continuation after the context's (prefix
    checked by ``adapter.encode``); ``end_of_turn`` appends the end-of-turn token after them.
    The processor resizes every image to one size, so the image only fixes how many image tokens
    there are, the same for all: the ids of a (context, continuation) pair are computed once.
    """
    end = adapter.processor.tokenizer.convert_tokens_to_ids(END_OF_TURN)
    cache: dict[tuple[str, str], tuple[tuple[int, ...], int]] = {}
    out = []
    for ex in examples:
        key = (ex.context, ex.continuation)
        if key not in cache:
            enc = adapter.encode(ScoreRequest(images[ex.item], ex.context, ex.continuation))
            cache[key] = (tuple(int(t) for t in enc.inputs["input_ids"][0]), enc.n_context)
        ids, start = cache[key]
        out.append(Encoded(ex.item, ids + ((end,) if ex.end_of_turn else ()), start))
    return out


def load_items(
    n: int,
    *,
    seed: int,
    image_size: int,
    correlation: float | None,
    correlated_types: Sequence[str] | None = None,
    letter_bias: tuple[str, float] | None = None,
    text_prior_types: Sequence[str] | None = None,
) -> list[Any]:
    """``n`` items of the synthetic generator's training mode (``correlation=None``: balanced);
    ``correlated_types``: only those types carry the correlated cue; ``letter_bias`` and
    ``text_prior_types``: the confounds planted on top (``synth.confounds``)."""
    from mmspubench.dataset_builder.synth.generate import generate_items

    confounds: dict[str, Any] = {"letter_bias": letter_bias, "text_prior_types": text_prior_types}
    # Balanced data plants uniformly drawn values ("random" cue): the spurious value says nothing
    # about the class. The generator's own default for a missing correlation is 0.9, not balanced.
    if correlation is None:
        return list(
            generate_items(n, seed=seed, image_size=image_size, mode="train", cue="random", **confounds)
        )
    return list(
        generate_items(
            n,
            seed=seed,
            image_size=image_size,
            mode="train",
            correlation=correlation,
            correlated_types=correlated_types,
            **confounds,
        )
    )


def prepare(
    items: Sequence[Item], adapter: TransformersVLM, generate_answer: str = "option", reasoning: bool = False
) -> tuple[list[Encoded], torch.Tensor]:
    """Encoded examples of every item and the stacked pixel values (one row per item)."""
    if not items:
        raise MMSpuBenchError("training needs at least one item")
    images = [item.image.convert("RGB") for item in items]
    examples = [
        ex
        for i, item in enumerate(items)
        for ex in examples_for(i, item, adapter.render, generate_answer, reasoning)
    ]
    pixels = adapter.processor.image_processor(images=images, return_tensors="pt")["pixel_values"]
    return encode(examples, adapter, images), pixels
