"""The ``accuracy`` view: each item's multiple-choice answer to the published question (paper 4.3).

The runner asks it (:mod:`mmspubench.eval.asking`); the answer is the sample's own ``prediction``,
``correct``, ``raw_output`` and ``option_scores``. Its section is the accuracy overall and per type
with bootstrap intervals; with a confound view in the run it adds ``worst_type``/``worst_gap``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics
from mmspubench.eval.views.plugin import View

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import SampleResult


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``accuracy`` (every record must hold its answer)."""
    from mmspubench.eval.views import registry
    from mmspubench.eval.views.confounds import metrics as metrics_confounds

    for sample in ordered:
        if sample.correct is None:
            raise MMSpuBenchError(
                f"samples: record {sample.id!r}: field 'correct' missing in an accuracy run"
            )
    scored = [metrics.Scored(s.types, 1.0 if s.correct else 0.0) for s in ordered]
    unparsed = sum(1 for s in ordered if s.unparsed)
    summary = metrics.accuracy_summary(scored, unparsed, config.seed)
    if any(view.confound for view in registry.in_run(config)):
        return metrics_confounds.with_worst(summary)
    return summary


VIEW = View(
    name="accuracy",
    summary="the multiple-choice answer to the published question, overall and per type",
    paper=True,
    needs_accuracy=False,
    section=section,
)
