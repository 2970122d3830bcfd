"""The ``circular`` view: each item asked again under the three other cyclic rotations of its options.

An item counts as circular-correct when all four orders are answered right (letter bias and
position bias fall out). The sample's ``rotations`` holds the four answers, rotation 0 (the
published order) first; its section the circular accuracy and the letter shares
(:mod:`~mmspubench.eval.views.metrics_confounds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.eval import records
from mmspubench.eval.asking import Ask, answer_of
from mmspubench.eval.views import metrics_confounds, results_confounds
from mmspubench.eval.views.cells import any_section, section_pct
from mmspubench.eval.views.confound_plots import confound_plot
from mmspubench.eval.views.plugin import Chunk, Column, Part, View

if TYPE_CHECKING:
    from mmspubench.dataset_builder.schema import Item
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import SampleResult

OTHER_ROTATIONS = metrics_confounds.ROTATIONS[1:]
"""The rotations asked on top of the published order."""


def asks(items: Sequence[Item], config: RunConfig, state: Any) -> list[Ask]:
    """Rotations 1-3 of every item, item by item."""
    return [
        Ask(item, metrics_confounds.rotated_options(item.options, k), item.pil_image)
        for item in items
        for k in OTHER_ROTATIONS
    ]


def take(chunk: Chunk, config: RunConfig) -> list[tuple[records.Rotation, ...]]:
    """Each item's four rotations, the published answer as rotation 0."""
    out = []
    step = len(OTHER_ROTATIONS)
    for index, item in enumerate(chunk.items):
        own = [chunk.published[index], *chunk.replies[step * index : step * index + step]]
        out.append(
            tuple(
                records.Rotation(
                    k,
                    metrics_confounds.rotation_order(k),
                    metrics_confounds.rotated_answer(item.answer, k),
                    answer_of(reply, metrics_confounds.rotated_answer(item.answer, k)),
                )
                for k, reply in zip(metrics_confounds.ROTATIONS, own, strict=True)
            )
        )
    return out


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``circular`` (the records checked first)."""
    return results_confounds.circular(ordered, config.seed)


VIEW = View(
    name="circular",
    summary="the options in all four cyclic orders: right only when all four are right",
    confound=True,
    asks=asks,
    take=take,
    part=Part("rotations", lambda value: [r.to_json() for r in value], records.read_rotations),
    section=section,
    columns=(Column("Circular", section_pct("circular", "accuracy"), any_section("circular")),),
    plot=confound_plot("letter_share"),
)
