"""Putting multiple-choice questions to the model.

An :class:`Ask` is one question as shown: an item, its options in the order shown and the image
shown. The accuracy of a chunk asks every item once (:func:`published_asks`); each view of the run
adds its own asks after them (``circular`` the other rotations of the options, ``blind`` the
prompt without the image: :mod:`mmspubench.eval.views`). Every ask of a chunk goes into ONE
``generate`` or ``score`` call (:func:`answers`), so a prefix-sharing scorer runs each item's image
and question once for its four rotations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.checkpoint.thinking import THINKING_MAX_NEW_TOKENS
from mmspubench.eval.protocol import Generation, ScoreRequest, VisionLanguageModel, as_generation
from mmspubench.eval.records import Answer
from mmspubench.eval.replies.reading import Judge, read_reply
from mmspubench.eval.replies.reasoning import STYLES, split_reply, style_after_prompt
from mmspubench.eval.replies.record import ReplyReading, Tokens

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model answered to one ask."""

    prediction: str | None
    raw_output: str | None
    option_scores: tuple[float, ...] | None
    reading: ReplyReading | None = None
    """How a generated reply was read and what it cost; ``None`` in ``logprob`` mode."""


@dataclass(frozen=True, slots=True)
class Ask:
    """One multiple-choice question put to the model: an item with its options as shown."""

    item: Item
    options: tuple[str, ...]
    """The options in the order shown."""
    image: Any
    """The image shown: the item's, the blind view's grey one, or ``None`` (text-only)."""


def finite(scores: Sequence[float], what: str, item_id: str) -> list[float]:
    """``scores`` as floats; a non-finite one is an error naming the item."""
    values = [float(s) for s in scores]
    if not all(math.isfinite(v) for v in values):
        raise MMSpuBenchError(f"item {item_id!r}: the model returned a non-finite {what} score {values}")
    return values


def score_per_item(
    model: VisionLanguageModel, per_item: Sequence[Sequence[ScoreRequest]], items: Sequence[Item], what: str
) -> list[list[float]]:
    """All items' requests in ONE ``score`` call (a prefix-sharing scorer shares passes across
    items), split back per item in order; each item's scores must be finite."""
    requests = [r for group in per_item for r in group]
    scores = list(model.score(requests))
    if len(scores) != len(requests):
        raise MMSpuBenchError(f"the model returned {len(scores)} scores for {len(requests)} requests")
    out, first = [], 0
    for item, group in zip(items, per_item, strict=True):
        out.append(finite(scores[first : first + len(group)], what, item.id))
        first += len(group)
    return out


def mcq(item: Item, answer_mode: str, config: RunConfig, options: Sequence[str] | None = None) -> Any:
    """The multiple-choice prompt of ``item`` in the run's variant (``options``: as shown)."""
    shown = item.options if options is None else options
    return prompts.mcq_prompt(item.question, shown, answer_mode, config.prompt_variant, item.core_attributes)


def max_new_tokens(config: RunConfig, thinks: bool = False) -> int:
    """``--max-new-tokens``; when not given, the thinking budget for a model that thinks
    (``thinks``, or ``--thinking on``), else the prompt variant's default."""
    if config.max_new_tokens:
        return config.max_new_tokens
    if thinks or config.thinking == "on":
        return THINKING_MAX_NEW_TOKENS
    return prompts.variant(config.prompt_variant).max_new_tokens


def _render(model: VisionLanguageModel, ask: Ask, mode: str, config: RunConfig) -> str:
    prompt = mcq(ask.item, mode, config, ask.options)
    if ask.image is None:
        return str(model.render_text(prompt))
    return model.render(prompt)


def reasoning_style(model: VisionLanguageModel) -> str:
    """The model's ``reasoning_style`` (:mod:`~mmspubench.eval.protocol`), ``none`` without one."""
    style = getattr(model, "reasoning_style", "none")
    if style not in STYLES:
        raise MMSpuBenchError(
            f"the model's reasoning_style is {style!r}; expected one of {', '.join(STYLES)}"
        )
    return str(style)


def answers(
    model: VisionLanguageModel, asks: Sequence[Ask], config: RunConfig, judge: Judge | None = None
) -> list[Reply]:
    """Replies to every ask, in ONE ``generate`` or ``score`` call; a generated reply is split from
    its reasoning by the model's style and its answer read from the text after the reasoning only
    (:func:`~mmspubench.eval.replies.reading.read_reply`; ``judge``: asked where the parser reads
    nothing)."""
    contexts = [_render(model, a, config.answer_mode, config) for a in asks]
    if config.answer_mode == "generate":
        style = reasoning_style(model)
        outputs = model.generate([a.image for a in asks], contexts, max_new_tokens(config))
        if len(outputs) != len(asks):
            raise MMSpuBenchError(f"the model returned {len(outputs)} answers for {len(asks)} prompts")
        wrong = next((o for o in outputs if not isinstance(o, (str, Generation))), None)
        if wrong is not None:
            raise MMSpuBenchError(
                f"the model returned a {type(wrong).__name__} answer; expected a string or a Generation"
            )
        final = prompts.variant(config.prompt_variant).final_answer
        return [
            _read(as_generation(out), style_after_prompt(style, context), ask, final, judge)
            for ask, out, context in zip(asks, outputs, contexts, strict=True)
        ]
    letters = prompts.letter_continuations()
    per_item = [
        [ScoreRequest(a.image, c, letter) for letter in letters] for a, c in zip(asks, contexts, strict=True)
    ]
    scores = score_per_item(model, per_item, [a.item for a in asks], "option")
    return [Reply(argmax_letter(s), None, tuple(s)) for s in scores]


def _read(generation: Generation, style: str, ask: Ask, final: bool, judge: Judge | None) -> Reply:
    """One generated reply split and read."""
    split = split_reply(generation, style)
    found = read_reply(split, ask.options, final, judge, ask.item.question)
    tokens = Tokens(generation.prompt_tokens, generation.completion_tokens, generation.reasoning_tokens)
    reading = ReplyReading(
        split.answer_text,
        found.read_by,
        split.reasoning,
        split.truncated,
        tokens,
        generation.seconds,
        found.verdict,
    )
    return Reply(found.prediction, generation.text, None, reading)


def argmax_letter(scores: Sequence[float]) -> str:
    """The letter of the highest score; the first of tied letters (deterministic, documented)."""
    return ANSWER_LETTERS[max(range(len(scores)), key=lambda k: scores[k])]


def published_asks(items: Sequence[Item]) -> list[Ask]:
    """Every item's question as published: its options in order, its image."""
    return [Ask(item, tuple(item.options), item.pil_image) for item in items]


def answer_of(reply: Reply, gold: str) -> Answer:
    """A view's record of ``reply``, right when it is ``gold`` (the gold letter as shown)."""
    return Answer(
        reply.prediction, reply.prediction == gold, reply.raw_output, reply.option_scores, reply.reading
    )
