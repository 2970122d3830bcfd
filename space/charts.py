"""The Space's own charts as matplotlib figures (the ``plot`` extra, as the leaderboard chart):
the CGL per condition, the option probabilities, and the fitting of ``report --plot``'s figure.

Gradio's ``BarPlot`` draws with Vega-Lite and logs warnings of its own spec on every page (its
schema version, a ``zero`` on a band scale, ``fit-x``); it also hangs bars from zero, so on a
framed CGL axis a near-zero bar vanishes, and it clips long axis titles and labels. These figures
draw every label in full inside the frame, and every bar with a visible length.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
from mmspubench.space import cgla_view

if TYPE_CHECKING:
    from mmspubench.eval.analysis.plot_data import Series

CGL_TITLE = "CGL (log-likelihood of the class name)"
LABEL_WIDTH = 38
"""Characters per line of a condition's label (longer ones wrap, never cut)."""
LABEL_BAND = 0.45
"""Inches kept empty at the top of a chart of :func:`cgl_figure` and :func:`probability_figure`:
the page draws the chart's name ("CGL per condition") over its top left corner, where the first
bar's label was. 45 figure pixels (the figure's 100 dpi) hold Gradio's label at the Run tab's scale,
where two charts share a row."""
LINE_HEIGHT = 0.17
"""Inches per line of an 8-point tick label, with its leading."""
BAR_GAP = 0.12
"""Inches between the labels of two bars."""


def _plt() -> Any:
    from mmspubench.eval.analysis.plots import require_matplotlib

    return require_matplotlib()


def _text(value: str) -> str:
    """A run's or a visitor's text drawn as text, never as mathtext."""
    return value.replace("$", r"\$")


def _close(fig: Any) -> Any:
    """pyplot forgets ``fig`` (no figure kept per visitor); Gradio still renders it."""
    _plt().close(fig)
    return fig


def _bar_chart(labels: Sequence[str], width: float, below: float) -> tuple[Any, Any]:
    """A figure of one horizontal bar per label: each bar's slot as tall as the longest label
    (the slots are equal: one sized by the average would let a long label run over its
    neighbours), ``below`` inches for the axis title and legend, and :data:`LABEL_BAND` at the top."""
    lines = max(label.count("\n") + 1 for label in labels)
    height = below + len(labels) * (LINE_HEIGHT * lines + BAR_GAP) + LABEL_BAND
    fig, ax = _plt().subplots(figsize=(width, height), layout="constrained")
    fig.get_layout_engine().set(rect=(0.0, 0.0, 1.0, 1.0 - LABEL_BAND / height))
    return fig, ax


def cgl_figure(frame: pd.DataFrame) -> Any:
    """One horizontal bar per condition from the axis floor to its CGL (the axis framing the CGLs,
    :func:`cgla_view.cgl_axis_limits`), coloured by role, the value written at its end; ``None``
    for an empty frame."""
    if frame.empty:
        return None
    low, high = cgla_view.cgl_axis_limits(frame)
    labels = [textwrap.fill(_text(str(c)), LABEL_WIDTH) for c in frame["condition"]]
    fig, ax = _bar_chart(labels, 8.0, 1.1)
    ys = list(range(len(frame)))[::-1]  # the first condition on top
    colours = [cgla_view.COLOR_MAP[str(role)] for role in frame["role"]]
    values = [float(v) for v in frame["cgl"]]
    ax.barh(ys, [v - low for v in values], left=low, color=colours, height=0.7)
    for y, value in zip(ys, values, strict=True):
        ax.text(value, y, f" {value:.3f}", va="center", ha="left", fontsize=8)
    span = high - low
    ax.set_xlim(low, high + 0.18 * span)  # room for the values written beside the bars
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel(CGL_TITLE)
    ax.grid(axis="x", alpha=0.3)
    roles = [r for r in cgla_view.COLOR_MAP if r in set(frame["role"])]
    handles = [_plt().Rectangle((0, 0), 1, 1, color=cgla_view.COLOR_MAP[r]) for r in roles]
    fig.legend(handles, roles, loc="outside lower center", ncol=len(roles), fontsize=8, frameon=False)
    return _close(fig)


def probability_figure(frame: pd.DataFrame) -> Any:
    """The option probabilities (0 to 1) as horizontal bars, the chosen option in red, each value
    written beside its bar, the option texts in full; ``None`` for an empty frame."""
    if frame.empty:
        return None
    labels = [textwrap.fill(_text(str(o)), LABEL_WIDTH) for o in frame["option"]]
    fig, ax = _bar_chart(labels, 6.0, 0.7)
    ys = list(range(len(frame)))[::-1]
    colours = ["#dc2626" if c == "chosen" else "#94a3b8" for c in frame["chosen"]]
    values = [float(v) for v in frame["probability"]]
    ax.barh(ys, values, color=colours, height=0.7)
    for y, value in zip(ys, values, strict=True):
        ax.text(value, y, f" {value:.3f}", va="center", ha="left", fontsize=8)
    ax.set_xlim(0, 1.15)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("probability among the options (red: the chosen one)")
    return _close(fig)


def _fewer_columns(fig: Any) -> None:
    """The run legend under the accuracy panel in fewer columns until it is no wider than the
    figure (a wider figure is drawn smaller on the page); the figure grows by the rows it adds."""
    if not fig.axes or fig.axes[0].get_legend() is None:
        return
    from mmspubench.eval.analysis.plots import LEGEND_COLUMNS, legend_below

    ax = fig.axes[0]
    legend = ax.get_legend()
    handles, labels = ax.get_legend_handles_labels()
    columns = min(LEGEND_COLUMNS, len(labels))
    fig.canvas.draw()
    while columns > 1 and legend.get_window_extent().width > fig.bbox.width - 20.0:
        rows_before = math.ceil(len(labels) / columns)
        columns -= 1
        legend = legend_below(ax, columns, handles)
        added = math.ceil(len(labels) / columns) - rows_before
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height + 0.2 * added)
        fig.tight_layout()
        fig.canvas.draw()


def _legends_fit(fig: Any) -> None:
    """Widen the figure until every legend lies inside it (Gradio saves the figure as it is)."""
    _fewer_columns(fig)
    for _ in range(4):
        fig.canvas.draw()
        width = fig.bbox.width
        needed = max((lg.get_window_extent().width for lg in _legends(fig)), default=0.0)
        spill = max(
            (max(-lg.get_window_extent().x0, lg.get_window_extent().x1 - width) for lg in _legends(fig)),
            default=0.0,
        )
        if spill <= 0:
            return
        scale = max(needed + 20.0, width + 2 * spill + 20.0) / width
        fig.set_size_inches(fig.get_size_inches()[0] * scale, fig.get_size_inches()[1])
        fig.tight_layout()


def _legends(fig: Any) -> list[Any]:
    found = [ax.get_legend() for ax in fig.axes]
    return [lg for lg in [*found, *fig.legends] if lg is not None]


def fit_report_figure(fig: Any, series: Sequence[Series]) -> Any:
    """``report --plot``'s figure as the leaderboard shows it (its zero bars marked as in every
    figure, :func:`~mmspubench.eval.analysis.plots.mark_zeros`): legends inside."""
    _legends_fit(fig)
    return fig


def inside(fig: Any) -> bool:
    """Whether every legend of ``fig`` lies inside the figure (the tests' check, also for a figure
    of :func:`cgl_figure`)."""
    fig.canvas.draw()
    box = fig.bbox
    for legend in _legends(fig):
        extent = legend.get_window_extent()
        if (
            extent.x0 < -0.5
            or extent.x1 > box.width + 0.5
            or extent.y0 < -0.5
            or extent.y1 > box.height + 0.5
        ):
            return False
    return not math.isnan(box.width)
