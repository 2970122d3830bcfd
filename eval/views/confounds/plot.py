"""The confound views' ``report --plot`` panels, one per view (drawn by
:mod:`mmspubench.eval.views.confounds.panels`, imported when a plot is drawn)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.eval.views.plugin import Plot

if TYPE_CHECKING:
    from mmspubench.eval.records import SampleResult

PANEL_HEIGHT = 4.0
"""Inches per confound panel."""


def _series(
    results: Mapping[str, Any], samples: Sequence[SampleResult] | None, label: str, where: str
) -> Any:
    from mmspubench.eval.views.confounds import panels as plot_confounds

    return plot_confounds.confound_series(results, label, where, samples)


def _draw(ax: Any, panel: str, series: Sequence[Any]) -> None:
    from mmspubench.eval.views.confounds import panels as plot_confounds

    plot_confounds.DRAW[panel](ax, series)


def confound_plot(panel: str) -> Plot:
    """The plot of the confound view whose panel is ``panel`` (``letter_share``, ``gain``, ``reliability``)."""

    def panels(series: Sequence[Any]) -> list[str]:
        from mmspubench.eval.views.confounds import panels as plot_confounds

        return [p for p in plot_confounds.panels(series) if p == panel]

    return Plot(series=_series, panels=panels, draw=_draw, height=PANEL_HEIGHT)
