"""The ``circular`` view: each item asked again under the three other cyclic rotations of its options.

An item counts as circular-correct when all four orders are answered right (letter bias and
position bias fall out). The sample's ``rotations`` holds the four answers, rotation 0 (the
published order) first; its section the circular accuracy and the letter shares
(:mod:`~mmspubench.eval.views.confounds.metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.eval import records
from mmspubench.eval.asking import Ask, answer_of
from mmspubench.eval.views.confounds import metrics as metrics_confounds
from mmspubench.eval.views.confounds import record as results_confounds
from mmspubench.eval.views.confounds.cells import any_section, section_pct
from mmspubench.eval.views.confounds.plot import confound_plot
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


def check_record(
    rotations: Sequence[records.Rotation], sample: SampleResult, config: RunConfig
) -> tuple[str, str] | None:
    """The four rotations in order, each answer re-derived from the model's own output, and
    rotation 0 the published answer itself (the evaluator records the same reply twice, so a
    rotation set taken from another item, or edited, no longer matches)."""
    shifts = [r.rotation for r in rotations]
    if tuple(shifts) != metrics_confounds.ROTATIONS:
        return "rotations", f"shifts {shifts}; expected {list(metrics_confounds.ROTATIONS)} in order"
    for r in rotations:
        label = f"rotation {r.rotation}: "
        fault = results_confounds.answer_fault(r.reply, "rotations", label, config.answer_mode)
        if fault:
            return fault
    first = rotations[0].reply
    published = (sample.prediction, sample.raw_output, sample.option_scores)
    if (first.prediction, first.raw_output, first.option_scores) != published:
        return "rotations", "rotation 0 is not the published answer (prediction, raw_output, option_scores)"
    return None


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``circular`` (the records checked first)."""
    return results_confounds.circular(ordered, config.seed)


def closing(section: Mapping[str, Any]) -> str:
    """Its part of ``eval``'s closing line."""
    return f"circular {section['accuracy']:.2f}%"


VIEW = View(
    name="circular",
    summary="the options in all four cyclic orders: right only when all four are right",
    confound=True,
    asks=asks,
    take=take,
    part=Part("rotations", lambda value: [r.to_json() for r in value], records.read_rotations),
    check_record=check_record,
    section=section,
    closing=closing,
    columns=(Column("Circular", section_pct("circular", "accuracy"), any_section("circular")),),
    plot=confound_plot("letter_share"),
)
