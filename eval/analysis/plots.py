"""Figures of ``report --plot`` and ``compare --plot`` (matplotlib, Agg backend; the ``plot`` extra).

- ``report``: grouped bars per spurious type (paper abbreviations) and overall, one colour per
  run, with bootstrap 95% intervals: accuracy on top, CGLA_acc below; then the confound views'
  panels and one panel per intervention (the change per type under it), for the runs with them.
- ``compare``: the paired differences B - A per type and overall with their paired bootstrap 95%
  intervals: accuracy, CGLA_acc (percentage points) and mean CGLA_min (nats).

Figures are rendered into memory and written atomically by the caller: a failure leaves no file.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import NUM_OPTIONS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.plot_data import REPORT_GROUPS, Series, answer_modes, error_bars, group_ticks

if TYPE_CHECKING:
    from mmspubench.eval.records import SampleResult
    from mmspubench.eval.views.plugin import Plot

FORMATS = {".png": "png", ".svg": "svg"}
"""File suffix -> matplotlib format."""
PLOT_EXTRA = "pip install 'mm-spubench[plot]'"
CHANCE = 100.0 / NUM_OPTIONS
"""Accuracy of guessing among the options (25% for four), drawn on every accuracy panel."""
PLAIN_TEXT: dict[Any, Any] = {"text.parse_math": False, "text.usetex": False}
"""matplotlib settings under which a text is drawn as it is (no mathtext, no LaTeX)."""
NO_CGLA_NOTE = "no CGLA_acc to show: none of these runs computed CGLA (eval --metrics accuracy,cgla)"
LEGEND_COLUMNS = 4
"""Columns of the run legend (fewer when there are fewer runs)."""
SOME_CGLA_NOTE = "—: no figure (the run did not compute it, or has no item of the type)"


def check_plot_path(path: str | Path) -> str:
    """The format of a ``--plot`` file from its suffix (``png`` or ``svg``); anything else is refused."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise MMSpuBenchError(f"--plot {str(path)!r}: expected a file name ending in .png or .svg")
    return FORMATS[suffix]


def check_plot_output(paths: Sequence[str | Path], plot: str | Path) -> str:
    """``check_plot_path``, and the figure may not name an input run (nor a file inside one)."""
    from mmspubench.eval.results import run_inputs
    from mmspubench.outputs import refuse_overlap

    fmt = check_plot_path(plot)
    refuse_overlap("--plot", plot, [i for p in paths for i in run_inputs(p)])
    return fmt


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or a one-line error naming the extra."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        raise MMSpuBenchError(f"--plot needs matplotlib: {PLOT_EXTRA}") from None
    return plt


@contextmanager
def plain_text() -> Iterator[None]:
    """Every text of a figure made or drawn inside is plain text: a ``$`` in a model id, a legend
    or a title (all taken from run files) is drawn as typed, never parsed as mathtext."""
    import matplotlib

    with matplotlib.rc_context(PLAIN_TEXT):
        yield


def plain_figure(fig: Any) -> Any:
    """``fig`` with every text it holds set to plain text (for a figure drawn later, as the Space's)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
        text.set_usetex(False)
    return fig


def _render(fig: Any, fmt: str) -> bytes:
    plt = require_matplotlib()
    buffer = io.BytesIO()
    try:
        with plain_text():
            plain_figure(fig).savefig(buffer, format=fmt, dpi=100, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buffer.getvalue()


def mark_zeros(
    ax: Any, xs: Sequence[float], values: Sequence[float | None], width: float, colour: str
) -> None:
    """A bar of height zero draws nothing, which reads as a missing figure (drawn ``—``): each gets
    a flat stroke of its run's colour at zero and a ``0`` above it."""
    for x, v in zip(xs, values, strict=True):
        if v is not None and v == 0:
            ax.hlines(0.0, x - width * 0.45, x + width * 0.45, colors=colour, linewidth=2.5, zorder=3)
            ax.annotate(
                "0", (x, 0.0), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7
            )


def _bars(ax: Any, series: Sequence[Series], field: str, title: str) -> None:
    width = 0.8 / len(series)
    positions = list(range(len(REPORT_GROUPS)))
    suffix, labels = answer_modes(series)
    for k, run in enumerate(series):
        values = getattr(run, field)
        cis = getattr(run, field + "_ci95")
        xs = [p - 0.4 + width * (k + 0.5) for p in positions]
        heights = [0.0 if v is None else v for v in values]
        ax.bar(
            xs,
            heights,
            width,
            label=labels[k],  # plain text (plain_text): labels come from run files
            color=f"C{k % 10}",
            yerr=error_bars(values, cis),
            capsize=2,
            error_kw={"elinewidth": 0.8},
        )
        for x, v in zip(xs, values, strict=True):
            if v is None:  # a missing figure shows as a mark, not as a 0% bar
                ax.text(x, 1.0, "—", ha="center", va="bottom", fontsize=7)
        mark_zeros(ax, xs, values, width, f"C{k % 10}")
    ax.set_xticks(positions, group_ticks(series))
    ax.set_ylim(0, 105)
    ax.set_ylabel("%")
    ax.set_title(f"{title[:-1]}{suffix})" if suffix else title)  # "(bootstrap 95% CI, answer mode: ...)"
    ax.grid(axis="y", alpha=0.3)


def report_figure(series: Sequence[Series], fmt: str, panels: Sequence[ViewPanels] = ()) -> bytes:
    """Grouped bars of accuracy and CGLA_acc per type, one colour per run, then the panels of the
    views the runs recorded (:func:`view_panels`); the file's bytes."""
    return _render(report_figure_object(series, panels), fmt)


ViewPanels = tuple["Plot", Sequence[Any]]
"""A view's plot and its series of each run (:func:`view_panels`)."""


def view_panels(
    runs: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    wheres: Sequence[str],
    samples: Sequence[Sequence[SampleResult] | None] | None = None,
) -> list[ViewPanels]:
    """Every registered view's plot with its series of each run (``wheres``: the runs' files, named
    by the errors; ``samples``: each run's samples, ``None`` where it has none beside it), in
    registry order; a view whose runs have nothing to draw adds no panel."""
    from mmspubench.eval.views.registry import VIEWS

    each = list(samples) if samples is not None else [None] * len(runs)
    return [
        (
            view.plot,
            [
                view.plot.series(r, s, label, where)
                for r, s, label, where in zip(runs, each, labels, wheres, strict=True)
            ],
        )
        for view in VIEWS.values()
        if view.plot is not None
    ]


def report_figure_object(series: Sequence[Series], panels: Sequence[ViewPanels] = ()) -> Any:
    """The matplotlib figure of :func:`report_figure` (the Space's leaderboard shows it as is)."""
    if not series:
        raise MMSpuBenchError("--plot needs at least one run")
    plt = require_matplotlib()
    extra = [(plot, name, data) for plot, data in panels for name in plot.panels(data)]
    with plain_text():
        fig, axes = plt.subplots(
            2 + len(extra),
            1,
            figsize=(max(8.0, 1.2 * len(REPORT_GROUPS)), 8.0 + sum(plot.height for plot, _, _ in extra)),
            squeeze=False,
        )
        top, bottom = axes[0, 0], axes[1, 0]
        for ax, (plot, name, data) in zip(axes[2:, 0], extra, strict=True):
            plot.draw(ax, name, data)
        _bars(top, series, "accuracy", "Accuracy per spurious type (bootstrap 95% CI)")
        _chance_line(top)
        _bars(bottom, series, "cgla_acc", "CGLA_acc per spurious type (bootstrap 95% CI)")
        _cgla_note(bottom, series)
        legend_below(top, ncol=min(LEGEND_COLUMNS, len(series)))
        fig.tight_layout()
    return plain_figure(fig)


def legend_below(ax: Any, ncol: int, handles: Sequence[Any] | None = None) -> Any:
    """The run legend under the panel's tick labels, however many lines they have (one n per run)."""
    from matplotlib.transforms import ScaledTranslation

    lines = max((t.get_text().count("\n") + 1 for t in ax.get_xticklabels()), default=1)
    # 14 points per tick line (10-point text) and a gap: the legend starts below the last line.
    below = ScaledTranslation(0, -(14 * lines + 10) / 72, ax.figure.dpi_scale_trans)
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    else:
        labels = [h.get_label() for h in handles]
    return ax.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=ax.transAxes + below,
        ncol=ncol,
        fontsize=8,
    )


def _chance_line(ax: Any) -> None:
    """The accuracy of guessing, a dashed line named beside the right axis (the legend lists runs only)."""
    ax.axhline(CHANCE, color="0.35", linestyle="--", linewidth=0.9, label="_chance")
    where = ax.get_yaxis_transform()
    ax.text(1.005, CHANCE, f"chance\n{CHANCE:.0f}%", transform=where, va="center", fontsize=7, color="0.35")


def _cgla_note(ax: Any, series: Sequence[Series]) -> None:
    """Say why CGLA_acc bars are missing: no run computed CGLA (in the empty frame), or some figures
    are absent (a line above the frame, under the title: never over a bar)."""
    values = [v for run in series for v in run.cgla_acc]
    if all(v is None for v in values):
        ax.text(0.5, 0.5, NO_CGLA_NOTE, transform=ax.transAxes, ha="center", va="center", fontsize=9)
    elif any(v is None for v in values):
        # Between the title and the frame, where no bar reaches (bars reach 100 of the 105 drawn).
        ax.set_title(ax.get_title(), pad=14)
        ax.annotate(
            SOME_CGLA_NOTE,
            (0.5, 1.0),
            xycoords="axes fraction",
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=7,
        )


Key = str | tuple[str, ...]
"""A group's figure: its key, or the path to it (``("interventions", NAME, "change")``)."""


def _figure(group: dict[str, Any], key: Key) -> Any:
    value: Any = group
    for part in (key,) if isinstance(key, str) else key:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _differences(ax: Any, doc: dict[str, Any], key: Key, title: str, unit: str) -> None:
    groups = [g for g in doc["groups"] if _figure(g, key) is not None]
    names = [g["group"] for g in groups]
    diffs = [_figure(g, key)["difference"] for g in groups]
    cis = [tuple(_figure(g, key)["ci95"]) for g in groups]
    colours = ["C3" if ci[1] < 0 else "C2" if ci[0] > 0 else "C7" for ci in cis]
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.bar(range(len(names)), diffs, 0.6, color=colours, yerr=error_bars(diffs, cis), capsize=3)
    ax.set_xticks(range(len(names)), [f"{g['group']}\nn={g['n']}" for g in groups])
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)


def _no_cgla_reason(doc: dict[str, Any]) -> str:
    """Why a comparison has no CGLA panels: which run did not compute CGLA."""
    missing = [side.upper() for side in ("a", "b") if "cgla" not in (doc[side].get("metrics") or [])]
    if len(missing) == 2:
        return "no CGLA panels: neither run computed CGLA (eval --metrics accuracy,cgla)"
    if missing:
        return f"no CGLA panels: run {missing[0]} did not compute CGLA (eval --metrics accuracy,cgla)"
    return "no CGLA panels: the runs hold no paired CGLA figures"


COMPARE_CONFOUND_PANELS = (
    ("circular", "Circular accuracy (all four rotations right): B - A"),
    ("blind", "Blind accuracy (no image): B - A"),
    ("gain", "Gain of the image (accuracy - blind accuracy): B - A"),
)
"""The ``compare --plot`` panels of the confound views, drawn when both runs hold the figure."""


def _side(run: dict[str, Any]) -> str:
    view = f", {run['view']}" if run.get("view") else ""
    return f"{run['model']} [{run['variant']}, {run['answer_mode']}{view}]"


def compare_figure(doc: dict[str, Any], fmt: str) -> bytes:
    """Paired differences B - A with their intervals, per type and overall; the file's bytes."""
    plt = require_matplotlib()
    panels: list[tuple[Key, str, str]] = [
        (
            "accuracy",
            "Accuracy: B - A (paired bootstrap 95% CI; red/green: the interval excludes 0)",
            "percentage points",
        )
    ]
    has_cgla = any(g["cgla_acc"] is not None for g in doc["groups"])
    if has_cgla:
        panels += [
            ("cgla_acc", "CGLA_acc: B - A", "percentage points"),
            ("cgla_min", "mean CGLA_min: B - A", "nats"),
        ]
    panels += [
        (key, title, "percentage points")
        for key, title in COMPARE_CONFOUND_PANELS
        if any(g.get(key) is not None for g in doc["groups"])
    ]
    panels += [
        (
            ("interventions", name, "change"),
            f"Change under {name} (under it - published): B - A",
            "percentage points",
        )
        for name in (doc.get("interventions") or {}).get("compared", [])
    ]
    a, b = doc["a"], doc["b"]
    with plain_text():
        fig, axes = plt.subplots(len(panels), 1, figsize=(9.0, 3.2 * len(panels) + 0.9), squeeze=False)
        for ax, (key, title, unit) in zip(axes[:, 0], panels, strict=True):
            _differences(ax, doc, key, title, unit)
        if not has_cgla:
            axes[0, 0].set_xlabel(_no_cgla_reason(doc), fontsize=8)
        fig.suptitle(f"A: {_side(a)}   B: {_side(b)}   n = {doc['n']}", fontsize=9)
        fig.tight_layout()
    return _render(fig, fmt)


def write_report_plot(paths: Sequence[str | Path], plot: str | Path) -> None:
    """``report --plot``: read the runs (results.json, samples.jsonl beside it) and write the figure."""
    from mmspubench.eval.analysis.plot_data import report_series, run_labels
    from mmspubench.eval.analysis.stats.plot import rank_panel
    from mmspubench.eval.analysis.stats.tables import overall_ranks
    from mmspubench.eval.results import RESULTS_NAME, read_results, write_bytes_atomic

    fmt = check_plot_output(paths, plot)
    require_matplotlib()
    files = [Path(p) / RESULTS_NAME if Path(p).is_dir() else Path(p) for p in paths]
    runs = [read_results(f) for f in files]
    samples = [_run_samples(f, r) for f, r in zip(files, runs, strict=True)]
    labels = run_labels(runs, [f.parent for f in files])
    series = [report_series(r, s, label) for r, s, label in zip(runs, samples, labels, strict=True)]
    panels = view_panels(runs, labels, [str(f) for f in files], samples)
    panels += rank_panel(overall_ranks(labels, samples))
    write_bytes_atomic(Path(plot), [report_figure(series, fmt, panels)])


def _run_samples(results_path: Path, results: Mapping[str, Any]) -> list[SampleResult] | None:
    """The samples.jsonl beside ``results_path`` (``None`` when there is none), refused when
    another run wrote it (its run stamps): its intervals would be drawn under this run's name."""
    from mmspubench.eval.results import SAMPLES_NAME, read_finished_samples
    from mmspubench.eval.run_stamp import check_samples_beside

    path = results_path.parent / SAMPLES_NAME
    if not path.is_file():
        return None
    samples = read_finished_samples(path)
    check_samples_beside(path, results, results_path)
    return samples
