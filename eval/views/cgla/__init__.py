"""The ``cgla`` view: the class's log-likelihood under each core and spurious attribute (paper 4.3).

The runner scores its conditions (one ``score`` call per chunk); they are the sample's own
``conditions``, ``cgla_min`` and ``cgla_acc``. Its section is CGLA_acc overall and per type.
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


def checked_cgla(sample: SampleResult, reduction: str) -> float:
    """The sample's CGLA_min recomputed from its conditions; a recorded one that differs is refused."""
    value = metrics.cgla_min_of(
        [c.cgl for c in sample.conditions], [c.kind for c in sample.conditions], reduction
    )
    if sample.cgla_min != value or sample.cgla_acc != metrics.cgla_acc(value):
        raise MMSpuBenchError(
            f"samples: record {sample.id!r}: field 'cgla_min': {sample.cgla_min!r} does not follow from its "
            f"conditions under core reduction {reduction!r} (expected {value!r})"
        )
    return value


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``cgla``."""
    values = [metrics.Scored(s.types, checked_cgla(s, config.core_reduction)) for s in ordered]
    return metrics.cgla_summary(values, config.core_reduction, config.seed)


VIEW = View(
    name="cgla",
    summary="CGLA: the class's log-likelihood under the core against the spurious attributes",
    paper=True,
    needs_accuracy=False,
    section=section,
)
