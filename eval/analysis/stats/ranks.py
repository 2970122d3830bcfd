"""Rank intervals of several runs on the same items, and the groups of runs they cannot tell apart.

Every run is resampled with the same item draws (:func:`~mmspubench.eval.analysis.stats.resample.resampled_means`);
in each resample the runs are ranked by their mean (rank 1 = highest). Ties are handled by giving
a run the range of ranks it shares: in a resample, its best rank is 1 + the runs strictly above it
and its worst rank is the runs at or above it (itself included). The interval is::

    [ 2.5th percentile of the best ranks, 97.5th percentile of the worst ranks ]

(lower and higher order statistics, so the ends are ranks). Two identical runs therefore span both
of their ranks, and a run above every other on every item is ``[1, 1]``. The point rank is the
best rank on the observed data (competition ranking: 1, 1, 3). Runs whose intervals overlap,
directly or through a chain of overlaps, form a tied group.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV
from mmspubench.eval.analysis.stats.resample import resampled_means
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES, CI_LEVEL


@dataclass(frozen=True, slots=True)
class RankInterval:
    """One run's rank among the runs of a table, with its 95% bootstrap interval."""

    name: str
    """The run, as the table names it."""
    rate: float
    """Its mean over the items, in percent (accuracy, CGLA_acc)."""
    rank: int
    """Rank on the observed items: 1 + the runs strictly above it."""
    low: int
    """Best end of the interval (the smaller rank)."""
    high: int
    """Worst end of the interval (the larger rank)."""

    def label(self) -> str:
        """``2 [1, 3]``: the rank and its interval."""
        return f"{self.rank} [{self.low}, {self.high}]"


def _ranks(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best and worst rank of each run in each row of ``means`` (rows x runs)."""
    above = means[:, None, :] > means[:, :, None]  # [r, j, k]: run k above run j
    at_or_above = means[:, None, :] >= means[:, :, None]
    return 1 + above.sum(axis=2), at_or_above.sum(axis=2)


def rank_intervals(
    names: Sequence[str],
    values: Sequence[Sequence[float]] | np.ndarray,
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    clusters: Sequence[Hashable] | None = None,
) -> tuple[RankInterval, ...]:
    """Each run's rank and 95% interval; ``values`` is runs x items (1/0 per item), in ``names`` order."""
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2 or len(names) != data.shape[0]:
        raise ValueError(f"values must be one row per run: {len(names)} names, shape {data.shape}")
    if len(names) < 2:
        raise ValueError("a rank needs at least two runs")
    means = resampled_means(data, seed, resamples, clusters)
    best, worst = _ranks(means)
    observed_best, _ = _ranks(data.mean(axis=1)[None, :])
    alpha = (1.0 - CI_LEVEL) / 2.0
    low = np.quantile(best, alpha, axis=0, method="lower")
    high = np.quantile(worst, 1.0 - alpha, axis=0, method="higher")
    return tuple(
        RankInterval(name, 100.0 * float(data[i].mean()), int(observed_best[0, i]), int(low[i]), int(high[i]))
        for i, name in enumerate(names)
    )


OVERALL = "Overall"
"""The group of every item."""


def rank_intervals_by_group(
    names: Sequence[str],
    values: Sequence[Sequence[float]] | np.ndarray,
    types: Sequence[Sequence[str]],
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, tuple[RankInterval, ...] | None]:
    """:func:`rank_intervals` overall and per type (abbreviation keys, all nine; ``None`` for a type
    without items). ``types``: each item's canonical type names; per type the items of that type
    are resampled, with the same seed (as :func:`mmspubench.eval.metrics.accuracy_summary`)."""
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(types):
        raise ValueError(f"values must be runs x items with one type list per item: shape {data.shape}")
    out: dict[str, tuple[RankInterval, ...] | None] = {OVERALL: rank_intervals(names, data, seed, resamples)}
    for spurious in SPURIOUS_TYPES:
        chosen = [
            i
            for i, names_of in enumerate(types)
            if any(TYPE_ABBREV.get(t) == spurious.abbrev for t in names_of)
        ]
        out[spurious.abbrev] = rank_intervals(names, data[:, chosen], seed, resamples) if chosen else None
    return out


def tied_groups(intervals: Sequence[RankInterval]) -> tuple[tuple[str, ...], ...]:
    """Runs whose rank intervals overlap (chains merged), best first; a resolved run is a group of one."""
    ordered = sorted(intervals, key=lambda r: (r.low, r.rank, r.high))
    groups: list[list[RankInterval]] = []
    reach = 0
    for item in ordered:
        if groups and item.low <= reach:
            groups[-1].append(item)
            reach = max(reach, item.high)
        else:
            groups.append([item])
            reach = item.high
    return tuple(tuple(r.name for r in sorted(g, key=lambda r: (r.rank, -r.rate))) for g in groups)


def tied_text(intervals: Sequence[RankInterval]) -> str:
    """The tied groups as one line (``A = B = C; D``); ``no ties`` when every rank is resolved."""
    groups = [g for g in tied_groups(intervals) if len(g) > 1]
    return "; ".join(" = ".join(g) for g in groups) if groups else "no ties"
