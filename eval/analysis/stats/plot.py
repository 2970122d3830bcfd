"""``report --plot``'s rank panel: each run's rank with its 95% rank interval as an error bar on a
rank axis (two runs or more on the same items, with their samples.jsonl)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmspubench.eval.analysis.stats.ranks import RankInterval, tied_text
from mmspubench.eval.views.plugin import Plot

PANEL = "ranks"
"""The panel's name (one panel: overall accuracy)."""


def _draw(ax: Any, name: str, data: Sequence[RankInterval]) -> None:
    ordered = sorted(data, key=lambda r: (r.rank, r.low, r.high))
    ys = list(range(len(ordered)))
    ranks = [r.rank for r in ordered]
    below = [r.rank - r.low for r in ordered]
    above = [r.high - r.rank for r in ordered]
    ax.errorbar(ranks, ys, xerr=[below, above], fmt="o", color="C0", capsize=4)
    ax.set_yticks(ys, [f"{r.name} ({r.rate:.1f}%)" for r in ordered])
    ax.invert_yaxis()  # the best run on top
    ax.set_xticks(range(1, len(ordered) + 1))
    ax.set_xlim(0.5, len(ordered) + 0.5)
    ax.set_xlabel("rank by accuracy (1 = best)")
    ax.set_title(f"Rank with its 95% interval (paired bootstrap over the items); tied: {tied_text(ordered)}")
    ax.grid(axis="x", alpha=0.3)


def _made_whole(*_: Any) -> None:
    """The rank panel's data is made from all runs at once (:func:`rank_panel`), not run by run."""


def rank_panel(intervals: Sequence[RankInterval] | None) -> list[tuple[Plot, Sequence[Any]]]:
    """The panel of ``report --plot`` (none for fewer than two runs or runs on other items)."""
    if not intervals:
        return []
    height = 1.2 + 0.35 * len(intervals)
    plot = Plot(series=_made_whole, panels=lambda data: [PANEL] if data else [], draw=_draw, height=height)
    return [(plot, list(intervals))]
