"""The ``calibration`` view: the option probabilities of the published answer (``--answer-mode logprob``).

It asks nothing new: the sample's ``option_probs`` is the softmax of its letter scores, and its
section the expected calibration error and the reliability bins
(:mod:`~mmspubench.eval.views.confounds.calibration`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.eval import records
from mmspubench.eval.views.confounds import calibration as metrics_calibration
from mmspubench.eval.views.confounds import record as results_confounds
from mmspubench.eval.views.confounds.plot import confound_plot
from mmspubench.eval.views.plugin import Chunk, Part, View

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import SampleResult


def take(chunk: Chunk, config: RunConfig) -> list[tuple[float, ...] | None]:
    """Each item's option probabilities (from its published letter scores)."""
    return [
        None if reply.option_scores is None else metrics_calibration.option_probs(reply.option_scores)
        for reply in chunk.published
    ]


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``calibration`` (probabilities checked against the letter scores)."""
    return results_confounds.calibration(ordered, config.seed)


def closing(section: Mapping[str, Any]) -> str:
    """Its part of ``eval``'s closing line."""
    return f"Brier {section['brier']:.3f}, ECE {section['ece']:.3f}"


VIEW = View(
    name="calibration",
    summary="how well the option probabilities match the accuracy (ECE, reliability bins)",
    answer_mode="logprob",
    confound=True,
    take=take,
    part=Part("option_probs", list, lambda value: records.read_numbers(value, "option_probs")),
    section=section,
    closing=closing,
    plot=confound_plot("reliability"),
)
