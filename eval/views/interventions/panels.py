"""The interventions panels of ``report --plot``: per type, the change of accuracy under each
intervention, one panel per intervention, drawn for the runs that recorded it.

The data (:class:`InterventionSeries`, :func:`intervention_series`) is plain, read from
results.json's ``interventions`` section only:

- per group of :data:`~mmspubench.eval.analysis.plot_data.REPORT_GROUPS` (the nine types, then
  overall): ``change.by_type[t]`` with ``change.ci95_by_type[t]``, overall ``change.gain`` with
  ``change.ci95`` (intervened - published, percentage points, paired bootstrap 95% intervals);
- the items per group: ``accuracy.n_by_type`` and ``n`` of that intervention (tick labels; a
  count above ``n``, or an ``accuracy.n`` other than ``n``, is an edited file and shows none);
- the types it targets (their columns are shaded; a counterfactual's targets are each item's own,
  so its panel shades none and says so) and the targeted contrast with its interval (in the legend).

A figure that is missing or malformed gives no bar (a ``—`` mark), never a made-up value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmspubench.eval.analysis.plot_data import (
    OVERALL,
    REPORT_GROUPS,
    Interval,
    count_ticks,
    error_bars,
    read_count,
    read_interval,
    read_mapping,
    read_number,
)
from mmspubench.eval.intervention_names import CF_PREFIX
from mmspubench.eval.views.confounds.cells import fixed, interval
from mmspubench.eval.views.interventions.record import GAPS

Bar = float | None


def _within(value: Any, total: int | None) -> int | None:
    """A type's item count, shown only when it can be one: 0 to the items asked under it."""
    count = read_count(value)
    return count if count is not None and total is not None and count <= total else None


@dataclass(frozen=True, slots=True)
class InterventionBars:
    """One run's bars under one intervention."""

    name: str
    """The intervention (``grayscale``, ``cf:cue-aligned``...)."""
    targets: tuple[str, ...]
    """Abbreviations of the types it targets."""
    change: tuple[Bar, ...]
    """Change in percentage points per group of :data:`REPORT_GROUPS`."""
    ci95: tuple[Interval | None, ...]
    """Paired bootstrap 95% interval of each bar."""
    n: tuple[int | None, ...]
    """Items per group asked under it."""
    contrast: float | None
    """Targeted contrast (points); ``None`` when the run has none (a group was empty)."""
    contrast_ci95: Interval | None
    """Its 95% interval."""


@dataclass(frozen=True, slots=True)
class InterventionSeries:
    """One run's interventions panels' data (empty: the run recorded no interventions)."""

    label: str
    """Legend text (as the run's accuracy bars)."""
    bars: tuple[InterventionBars, ...]
    """One entry per intervention, in the run's order."""


def _bars(name: str, figures: Mapping[str, Any]) -> InterventionBars:
    change = read_mapping(figures, "change")
    by_type, ci = read_mapping(change, "by_type"), read_mapping(change, "ci95_by_type")
    accuracy = read_mapping(figures, "accuracy")
    counts = read_mapping(accuracy, "n_by_type")
    values = [change.get("gain") if g == OVERALL else by_type.get(g) for g in REPORT_GROUPS]
    cis = [change.get("ci95") if g == OVERALL else ci.get(g) for g in REPORT_GROUPS]
    total = read_count(figures.get("n"))
    if total is not None and read_count(accuracy.get("n")) not in (None, total):
        total = None  # two counts of the same items that disagree: an edited file shows none
    n = [total if g == OVERALL else _within(counts.get(g), total) for g in REPORT_GROUPS]
    targets = figures.get("targets")
    contrast = read_mapping(figures, "targeted_contrast")
    return InterventionBars(
        name=name,
        targets=tuple(str(t) for t in targets) if isinstance(targets, list) else (),
        change=tuple(read_number(v) for v in values),
        ci95=tuple(read_interval(v) for v in cis),
        n=tuple(read_count(v) for v in n),
        contrast=read_number(contrast.get("value")),
        contrast_ci95=read_interval(contrast.get("ci95")),
    )


def intervention_series(results: Mapping[str, Any], label: str) -> InterventionSeries:
    """The interventions panels' data of one run's results.json."""
    by_name = read_mapping(read_mapping(results, "interventions"), "by_intervention")
    return InterventionSeries(
        label, tuple(_bars(str(k), v) for k, v in by_name.items() if isinstance(v, Mapping))
    )


def panels(series: Sequence[InterventionSeries]) -> list[str]:
    """The interventions to draw, one panel each, in the order first met over the runs."""
    seen: dict[str, None] = {}
    for run in series:
        for bars in run.bars:
            seen.setdefault(bars.name, None)
    return list(seen)


def _of(run: InterventionSeries, name: str) -> InterventionBars | None:
    return next((b for b in run.bars if b.name == name), None)


def _legend(run: InterventionSeries, bars: InterventionBars) -> str:
    if bars.contrast is None:
        return run.label
    ci = "" if bars.contrast_ci95 is None else f" {interval(bars.contrast_ci95, 1)}"
    return f"{run.label} (targeted contrast {fixed(bars.contrast, 1, True)}{ci})"


def draw(ax: Any, name: str, series: Sequence[InterventionSeries]) -> None:
    """Grouped bars of the change per type under ``name``, one colour per run (the accuracy
    panels' colours), its targets' columns shaded, n per run under each tick."""
    from mmspubench.eval.analysis.plots import mark_zeros

    width = 0.8 / len(series)
    shown = [(k, run, bars) for k, run in enumerate(series) if (bars := _of(run, name)) is not None]
    aimed = {t for _, _, b in shown for t in b.targets}
    targets = [g for g in REPORT_GROUPS if g in aimed]
    # A counterfactual targets each item's own types: its recorded targets are their union over
    # the items, so no column holds only targeted items and none is shaded.
    per_item = name.startswith(CF_PREFIX)
    for g, group in enumerate(REPORT_GROUPS if not per_item else ()):
        if group in targets:
            ax.axvspan(g - 0.45, g + 0.45, color="0.9", zorder=0)
    for k, run, bars in shown:
        xs = [p - 0.4 + width * (k + 0.5) for p in range(len(REPORT_GROUPS))]
        heights = [0.0 if v is None else v for v in bars.change]
        ax.bar(
            xs,
            heights,
            width,
            label=_legend(run, bars),
            color=f"C{k % 10}",
            yerr=error_bars(bars.change, bars.ci95),
            capsize=2,
            error_kw={"elinewidth": 0.8},
        )
        for x, v in zip(xs, bars.change, strict=True):
            if v is None:  # a missing figure shows as a mark, not as a 0 bar
                ax.text(x, 0.0, "—", ha="center", va="bottom", fontsize=7)
        mark_zeros(ax, xs, bars.change, width, f"C{k % 10}")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(REPORT_GROUPS)), count_ticks([b.n for _, _, b in shown]))
    ax.set_ylabel("percentage points")
    if per_item:
        aim = "each item's counterfactual targets its own types"
    elif len(targets) == len(REPORT_GROUPS) - 1:
        aim = "targets every type"
    else:
        aim = f"targets {', '.join(targets)}, shaded" if targets else "no target type"
    gap = f" = the {name[len(CF_PREFIX) :]} - cue-broken gap" if name in GAPS else ""
    ax.set_title(f"Change under {name}{gap} ({aim}): intervened - published (paired bootstrap 95% CI)")
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="y", alpha=0.3)
