"""The ``blind`` view: each item asked without its image (or with a mid-grey one, ``--blind-image grey``).

What a model answers without seeing the image is its text prior; the gain (with minus without)
is what the image adds. The sample's ``blind`` holds the answer; its section the blind accuracy
and the paired gain (:mod:`~mmspubench.eval.views.confounds.metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import records
from mmspubench.eval.asking import Ask, answer_of
from mmspubench.eval.views.confounds import record as results_confounds
from mmspubench.eval.views.confounds.cells import any_section, section_pct
from mmspubench.eval.views.confounds.plot import confound_plot
from mmspubench.eval.views.plugin import Chunk, Column, Part, View

if TYPE_CHECKING:
    from mmspubench.dataset_builder.schema import Item
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import SampleResult

GREY = (128, 128, 128)
"""The blind view's image with ``--blind-image grey``: this colour at the item image's size."""


def check(config: RunConfig) -> None:
    """``--blind-image`` is the blind view's option."""
    if config.blind_image != "none" and "blind" not in config.metrics:
        raise MMSpuBenchError(f"--blind-image {config.blind_image} is used only with --metrics ...,blind")


def check_model(model: Any, config: RunConfig) -> None:
    """``--blind-image none`` needs the model's text-only chat path (``text_only`` true)."""
    if config.blind_image == "none" and not getattr(model, "text_only", False):
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


def asks(items: Sequence[Item], config: RunConfig, state: Any) -> list[Ask]:
    """Every item's question in the published order, without its image."""
    return [Ask(item, tuple(item.options), blind_image(item, config)) for item in items]


def take(chunk: Chunk, config: RunConfig) -> list[records.Answer]:
    """Each item's blind answer."""
    return [answer_of(reply, item.answer) for item, reply in zip(chunk.items, chunk.replies, strict=True)]


def check_record(answer: records.Answer, sample: SampleResult, config: RunConfig) -> tuple[str, str] | None:
    """The blind answer re-derived from the model's own output."""
    return results_confounds.answer_fault(answer, "blind", "", config.answer_mode)


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``blind`` (the records checked first)."""
    return results_confounds.blind(ordered, config)


def closing(section: Mapping[str, Any]) -> str:
    """Its part of ``eval``'s closing line."""
    return f"blind {section['accuracy']:.2f}% (gain {section['gain']:+.2f} pp)"


VIEW = View(
    name="blind",
    summary="the question without the image: the text prior, and what the image adds (gain)",
    confound=True,
    check=check,
    check_model=check_model,
    asks=asks,
    take=take,
    part=Part("blind", lambda value: value.to_json(), lambda value: records.Answer.from_json(value, "blind")),
    check_record=check_record,
    section=section,
    closing=closing,
    columns=(
        Column("Blind", section_pct("blind", "accuracy"), any_section("blind")),
        Column("Gain", section_pct("blind", "gain", signed=True), any_section("blind")),
    ),
    plot=confound_plot("gain"),
)
