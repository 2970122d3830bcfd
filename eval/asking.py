"""Putting multiple-choice questions to the model: the published view and the confound views.

An :class:`Ask` is one question as shown: an item, its options in the order shown and the image
shown. The accuracy of a chunk asks every item once (the published order); ``circular`` adds the
three other cyclic rotations of the options and ``blind`` the prompt without the image
(:func:`asks_of`). Every ask of a chunk goes into ONE ``generate`` or ``score`` call, so a
prefix-sharing scorer runs each item's image and question once for its four rotations.
:func:`records_of` turns the answers back into each item's records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics_calibration, metrics_confounds, prompts
from mmspubench.eval.config import RunConfig
from mmspubench.eval.intervention_asks import Shown
from mmspubench.eval.parse import answer_parser
from mmspubench.eval.protocol import ScoreRequest, VisionLanguageModel
from mmspubench.eval.records import Answer, Rotation

GREY = (128, 128, 128)
"""The blind view's image with ``--blind-image grey``: this colour at the item image's size."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model answered to one ask."""

    prediction: str | None
    raw_output: str | None
    option_scores: tuple[float, ...] | None


@dataclass(frozen=True, slots=True)
class Ask:
    """One multiple-choice question put to the model: an item with its options as shown."""

    item: Item
    options: tuple[str, ...]
    """The options in the order shown."""
    image: Any
    """The image shown: the item's, the blind view's grey one, or ``None`` (text-only)."""


@dataclass(frozen=True, slots=True)
class Views:
    """One item's answers: the published order and, when asked, the confound views."""

    published: Reply
    rotations: tuple[Rotation, ...] | None
    blind: Answer | None
    option_probs: tuple[float, ...] | None
    interventions: tuple[tuple[Shown, Answer], ...] | None = None
    """Each changed image with the answer to it (``interventions``), in the run's order."""


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


def max_new_tokens(config: RunConfig) -> int:
    """``--max-new-tokens``, or the prompt variant's default when not given."""
    return config.max_new_tokens or prompts.variant(config.prompt_variant).max_new_tokens


def _render(model: VisionLanguageModel, ask: Ask, mode: str, config: RunConfig) -> str:
    prompt = mcq(ask.item, mode, config, ask.options)
    if ask.image is None:
        return str(model.render_text(prompt))
    return model.render(prompt)


def answers(model: VisionLanguageModel, asks: Sequence[Ask], config: RunConfig) -> list[Reply]:
    """Replies to every ask, in ONE ``generate`` or ``score`` call."""
    contexts = [_render(model, a, config.answer_mode, config) for a in asks]
    if config.answer_mode == "generate":
        outputs = model.generate([a.image for a in asks], contexts, max_new_tokens(config))
        if len(outputs) != len(asks):
            raise MMSpuBenchError(f"the model returned {len(outputs)} answers for {len(asks)} prompts")
        parse = answer_parser(prompts.variant(config.prompt_variant).final_answer)
        return [Reply(parse(out, a.options), out, None) for a, out in zip(asks, outputs, strict=True)]
    letters = prompts.letter_continuations()
    per_item = [
        [ScoreRequest(a.image, c, letter) for letter in letters] for a, c in zip(asks, contexts, strict=True)
    ]
    scores = score_per_item(model, per_item, [a.item for a in asks], "option")
    return [Reply(argmax_letter(s), None, tuple(s)) for s in scores]


def argmax_letter(scores: Sequence[float]) -> str:
    """The letter of the highest score; the first of tied letters (deterministic, documented)."""
    return ANSWER_LETTERS[max(range(len(scores)), key=lambda k: scores[k])]


def check_blind_path(model: VisionLanguageModel, config: RunConfig) -> None:
    """``--blind-image none`` needs the model's text-only chat path (``text_only`` true)."""
    if "blind" in config.metrics and config.blind_image == "none" and not getattr(model, "text_only", False):
        raise MMSpuBenchError(
            f"model {model.info.id!r} has no text-only prompt path in this backend; "
            "use --blind-image grey (a mid-grey image of the same size)"
        )


def blind_image(item: Item, config: RunConfig) -> Any:
    """What the blind view shows: ``None`` (text-only) or a grey image of the item image's size."""
    if config.blind_image == "none":
        return None
    from PIL import Image

    return Image.new("RGB", item.pil_image.size, GREY)


def asks_of(
    items: Sequence[Item], config: RunConfig, shown: Sequence[Sequence[Shown]] | None = None
) -> list[Ask]:
    """The published asks of every item, then its rotations 1-3 (circular), then its blind ask,
    then its changed images (``shown``, interventions) in the published option order."""
    asks = [Ask(i, tuple(i.options), i.pil_image) for i in items]
    if "circular" in config.metrics:
        for item in items:
            for k in metrics_confounds.ROTATIONS[1:]:
                asks.append(Ask(item, metrics_confounds.rotated_options(item.options, k), item.pil_image))
    if "blind" in config.metrics:
        asks += [Ask(i, tuple(i.options), blind_image(i, config)) for i in items]
    for item, images in zip(items, shown or [() for _ in items], strict=True):
        asks += [Ask(item, tuple(item.options), s.image) for s in images]
    return asks


def _answer(reply: Reply, gold: str) -> Answer:
    return Answer(reply.prediction, reply.prediction == gold, reply.raw_output, reply.option_scores)


def records_of(
    items: Sequence[Item],
    replies: Sequence[Reply],
    config: RunConfig,
    shown: Sequence[Sequence[Shown]] | None = None,
) -> list[Views]:
    """Each item's views from the replies in :func:`asks_of` order."""
    n = len(items)
    rest = list(replies[n:])
    out = []
    rotated = rest[: 3 * n] if "circular" in config.metrics else []
    blind = rest[len(rotated) : len(rotated) + n] if "blind" in config.metrics else []
    changed = iter(rest[len(rotated) + len(blind) :])
    for index, item in enumerate(items):
        published = replies[index]
        rotations = None
        if rotated:
            own = [published, *rotated[3 * index : 3 * index + 3]]
            rotations = tuple(
                Rotation(
                    k,
                    metrics_confounds.rotation_order(k),
                    metrics_confounds.rotated_answer(item.answer, k),
                    _answer(reply, metrics_confounds.rotated_answer(item.answer, k)),
                )
                for k, reply in zip(metrics_confounds.ROTATIONS, own, strict=True)
            )
        probs = None
        if "calibration" in config.metrics and published.option_scores is not None:
            probs = metrics_calibration.option_probs(published.option_scores)
        asked = None
        if "interventions" in config.metrics and shown is not None:
            asked = tuple((s, _answer(next(changed), item.answer)) for s in shown[index])
        out.append(
            Views(published, rotations, _answer(blind[index], item.answer) if blind else None, probs, asked)
        )
    return out
