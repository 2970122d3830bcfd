"""The Space's charts: matplotlib, every label inside the frame, every bar visible, no Vega-Lite."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from mmspubench.eval.analysis.plot_data import REPORT_GROUPS, Series
from mmspubench.space import cgla_view

pytest.importorskip("matplotlib")
from mmspubench.space import charts

from .fixtures import sample_record


def _canvas(fig: Any) -> Any:
    """An Agg canvas for a figure pyplot has closed (as Gradio gets it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)


def _inside(fig: Any, artists: list[Any]) -> bool:
    _canvas(fig).draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    for artist in artists:
        box = artist.get_window_extent(renderer)
        if box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > width + 0.5 or box.y1 > height + 0.5:
            return False
    return True


def _frame(near_zero: float = -0.0005) -> pd.DataFrame:
    record = sample_record()
    record["conditions"][0]["cgl"] = near_zero  # a near-zero CGL (the best core)
    record["conditions"][1]["attribute"] = "a very long core attribute text that goes on and on " * 2
    return cgla_view.cgl_frame(record)


def test_every_cgl_bar_is_visible_and_every_label_inside_the_frame() -> None:
    frame = _frame()
    fig = charts.cgl_figure(frame)
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    widths = [p.get_width() for p in ax.patches]
    assert len(widths) == len(frame) and min(widths) >= 0.05 * (high - low)  # the near-zero bar too
    near = ax.patches[0]
    assert near.get_x() + near.get_width() == pytest.approx(-0.0005)  # ends at its value
    labels = [" ".join(t.get_text().split()) for t in ax.get_yticklabels()]
    assert labels == [" ".join(c.split()) for c in frame["condition"]]  # in full, never cut with "…"
    assert ax.get_xlabel() == charts.CGL_TITLE
    assert _inside(fig, [*ax.get_yticklabels(), ax.xaxis.label, *fig.legends])


def test_cgl_labels_are_text_not_mathtext() -> None:
    record = sample_record()
    record["conditions"][2]["attribute"] = r"$\undefinedcommand$"
    fig = charts.cgl_figure(cgla_view.cgl_frame(record))
    _canvas(fig).draw()  # mathtext would raise on the unknown command
    assert any(r"\undefinedcommand" in t.get_text() for t in fig.axes[0].get_yticklabels())


def test_probability_bars_written_and_inside() -> None:
    frame = pd.DataFrame(
        {
            "option": [f"{k}. option {k} " * 4 for k in "ABCD"],
            "probability": [0.7, 0.2, 0.1, 0.0],
            "chosen": ["chosen", "other", "other", "other"],
        }
    )
    fig = charts.probability_figure(frame)
    ax = fig.axes[0]
    assert [round(p.get_width(), 6) for p in ax.patches] == [0.7, 0.2, 0.1, 0.0]
    assert [t.get_text().strip() for t in ax.texts] == ["0.700", "0.200", "0.100", "0.000"]  # 0 says so
    assert _inside(fig, [*ax.get_yticklabels(), ax.xaxis.label])
    assert charts.cgl_figure(frame.iloc[0:0]) is None and charts.probability_figure(frame.iloc[0:0]) is None


def _series(label: str, first: float | None) -> Series:
    values = (first, *([50.0] * (len(REPORT_GROUPS) - 1)))
    return Series(label, values, (None,) * len(values), values, (None,) * len(values))


def _report(series: list[Series]) -> Any:
    from mmspubench.eval.analysis.plots import report_figure_object

    return report_figure_object(series)


def test_the_leaderboard_legend_lies_inside_the_figure() -> None:
    series = [
        _series(f"org/a-rather-long-model-name-number-{k} [core-focus, generate]", 40.0) for k in range(5)
    ]
    raw = _report(series)
    assert not _inside(raw, [raw.axes[0].get_legend()])  # report --plot's figure as Gradio saves it
    fitted = charts.fit_report_figure(_report(series), series)
    assert _inside(fitted, [ax.get_legend() for ax in fitted.axes if ax.get_legend() is not None])


def _pixels(fig: Any) -> np.ndarray:
    _canvas(fig).draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3]


def _colour_near_baseline(fig: Any, patch: Any, colour: tuple[int, ...]) -> int:
    """Pixels of ``colour`` within the patch's x-span, 4 pixels around the axis baseline."""
    ax = patch.axes
    image = _pixels(fig)
    height = image.shape[0]
    (x0, y0), (x1, _) = ax.transData.transform(
        [(patch.get_x(), 0.0), (patch.get_x() + patch.get_width(), 0.0)]
    )
    rows = slice(int(height - y0) - 4, int(height - y0) + 4)
    block = image[rows, int(x0) + 1 : int(x1) - 1]
    return int(np.all(np.abs(block.astype(int) - colour) < 30, axis=-1).sum())


def test_a_zero_bar_is_visible_and_a_missing_one_is_not_drawn_as_zero() -> None:
    series = [_series("zero", 0.0), _series("missing", None)]
    fig = charts.fit_report_figure(_report(series), series)
    from matplotlib.colors import to_rgb

    ax = fig.axes[0]
    zero, missing = ax.containers[1].patches[0], ax.containers[3].patches[0]  # bar, errorbar, bar, errorbar
    colour = tuple(int(255 * c) for c in to_rgb("C0"))
    assert _colour_near_baseline(fig, zero, colour) > 10
    assert _colour_near_baseline(fig, missing, tuple(int(255 * c) for c in to_rgb("C1"))) == 0
    raw = _report(series)  # report --plot's own figure marks it too (it drew nothing before)
    assert _colour_near_baseline(raw, raw.axes[0].containers[1].patches[0], colour) > 10


def test_the_page_has_no_vega_lite_chart(tmp_path: Any) -> None:
    """Gradio's BarPlot logs Vega-Lite warnings of its own spec on every page load (its schema
    version, ``zero`` on a band scale, ``fit-x``): the page draws its charts with matplotlib."""
    import gradio as gr
    from mmspubench.space.explore import build_index
    from mmspubench.space.handlers import SpaceState
    from mmspubench.space.layout import build_app
    from mmspubench.space.leaderboard import leaderboard_frame

    from .fixtures import make_dataset

    dataset = make_dataset()
    state = SpaceState(dataset, "fixture", build_index(dataset), leaderboard_frame([]))
    demo = build_app(state=state)
    kinds = {type(block).__name__ for block in demo.blocks.values()}
    assert not any(
        isinstance(block, gr.components.native_plot.NativePlot) for block in demo.blocks.values()
    ), kinds
    assert {"explore-cgl-plot", "run-cgl-plot", "run-probs"} <= {
        block.elem_id for block in demo.blocks.values() if isinstance(block, gr.Plot)
    }


def _counted(label: str, cgla: float | None, n: tuple[int | None, ...]) -> Series:
    """A run whose CGLA_acc is ``cgla`` in every group (100: bars to the frame's top), ``n`` items per group."""
    accuracy = (40.0,) * len(REPORT_GROUPS)
    return Series(
        label, accuracy, (None,) * len(accuracy), (cgla,) * len(accuracy), (None,) * len(accuracy), n
    )


def _boxes_meet(a: Any, b: Any) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


def test_the_no_figure_note_lies_over_no_bar() -> None:
    """Runs with CGLA_acc 100 everywhere beside one without CGLA: the note explaining the "—"
    marks sat in the frame's top right corner, over the tallest bars."""
    from mmspubench.eval.analysis.plots import SOME_CGLA_NOTE

    whole = (90,) * len(REPORT_GROUPS)
    series = [_counted(f"run {k}", 100.0, whole) for k in range(3)] + [_counted("no cgla", None, whole)]
    for fig in (_report(series), charts.fit_report_figure(_report(series), series)):
        _canvas(fig).draw()
        renderer = fig.canvas.get_renderer()
        notes = [t for ax in fig.axes for t in ax.texts if t.get_text() == SOME_CGLA_NOTE]
        assert len(notes) == 1
        note = notes[0].get_window_extent(renderer)
        bars = [p.get_window_extent(renderer) for ax in fig.axes for p in ax.patches if p.get_height() > 0]
        assert bars and not [b for b in bars if _boxes_meet(note, b)]
        title = notes[0].axes.title.get_window_extent(renderer)
        assert not _boxes_meet(note, title) and _inside(fig, [notes[0]])


def test_every_tick_label_gives_one_n_per_run_in_the_legend_order() -> None:
    from mmspubench.eval.analysis.plot_data import group_ticks

    full, partial, old = (10,) * len(REPORT_GROUPS), (0,) * len(REPORT_GROUPS), (None,) * len(REPORT_GROUPS)
    ticks = group_ticks([_counted("a", 50.0, full), _counted("b", 50.0, partial), _counted("c", 50.0, full)])
    assert ticks[0] == "BG\nn=10/0/10"  # was "n=10/0": two numbers for three runs, then "n=10/0/" over "10"
    big = (2400,) * len(REPORT_GROUPS)
    wrapped = group_ticks([_counted("a", 50.0, big), _counted("b", 50.0, full), _counted("c", 50.0, big)])
    assert wrapped[0] == "BG\nn=2400/10\n/2400"  # a further line starts with the "/" it continues
    assert group_ticks([_counted("a", 50.0, full), _counted("b", 50.0, full)])[0] == "BG\nn=10"  # all alike
    assert group_ticks([_counted("a", 50.0, full), _counted("b", 50.0, old)])[0] == "BG\nn=10/?"
    assert group_ticks([_counted("a", 50.0, old)])[0] == "BG"


def test_the_run_legend_lies_below_every_tick_label() -> None:
    """Six runs of different n: four lines per tick label, and the legend still under them."""
    series = [_counted(f"org/model-{k}", 50.0, (10 + k,) * len(REPORT_GROUPS)) for k in range(6)]
    for fig in (_report(series), charts.fit_report_figure(_report(series), series)):
        _canvas(fig).draw()
        renderer = fig.canvas.get_renderer()
        top = fig.axes[0]
        legend = top.get_legend().get_window_extent(renderer)
        ticks = [t.get_window_extent(renderer) for t in top.get_xticklabels()]
        assert not [t for t in ticks if _boxes_meet(legend, t)]
        below = fig.axes[1].title.get_window_extent(renderer)
        assert not _boxes_meet(legend, below)


PAGE_LABEL = 0.4
"""Inches at the top of a chart under the page's label of it ("CGL per condition", "Option
probabilities"), which Gradio draws over the chart's top left corner (about 40 px at 100 dpi)."""
LONG = "a very long attribute text that wraps over many lines of its label " * 4


def _long_label_charts() -> list[Any]:
    record = sample_record()
    record["conditions"][1]["attribute"] = LONG
    extra = dict(record["conditions"][2])
    record["conditions"] += [
        {**extra, "attribute": f"cue {k}", "cgl": -5.0 - k} for k in range(5)
    ]  # ten bars
    options = pd.DataFrame(
        {
            "option": [f"A. {LONG}", "B. b", "C. c", "D. d"],
            "probability": [0.7, 0.2, 0.1, 0.0],
            "chosen": ["chosen", "other", "other", "other"],
        }
    )
    return [charts.cgl_figure(cgla_view.cgl_frame(record)), charts.probability_figure(options)]


def test_no_label_runs_over_another_or_under_the_pages_label() -> None:
    for fig in _long_label_charts():
        _canvas(fig).draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        ticks = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
        # was: the slots sized by the labels' mean, an 8-line label ran over its neighbours
        assert not [(a, b) for k, a in enumerate(ticks) for b in ticks[k + 1 :] if _boxes_meet(a, b)]
        top = fig.bbox.height - PAGE_LABEL * fig.dpi
        drawn = [*ticks, *(t.get_window_extent(renderer) for t in ax.texts), ax.get_window_extent(renderer)]
        assert max(box.y1 for box in drawn) <= top  # was: the first label under the page's label
        assert _inside(fig, [*ax.get_yticklabels(), ax.xaxis.label, *fig.legends])
