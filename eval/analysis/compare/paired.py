"""Paired comparison of two runs on the same items: differences, paired bootstrap and McNemar.

Both runs answered the same items, so every figure is paired: an item is resampled with both of
its outcomes (the paired bootstrap), and the test of "same accuracy" only looks at the items the
two runs disagree on (the exact McNemar test). Figures are computed overall and per spurious type
(paper abbreviations; an item with two types counts in both), for accuracy, for CGLA_acc and for
the mean CGLA_min when both runs have them, and for the confound views both runs recorded
(circular and blind accuracy, the gain of the image, Brier and ECE:
:mod:`mmspubench.eval.analysis.compare.confounds`).

Conventions (those of :mod:`mmspubench.eval.metrics`): accuracies are percentages, differences
are B - A in percentage points, intervals are percentile bootstrap 95% intervals seeded by
``seed``; a type without items has ``n = 0`` and no figures, never a silent 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV
from mmspubench.eval.analysis.compare import confounds as cc
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES
from mmspubench.eval.records import SampleResult
from mmspubench.eval.views.confounds.paired import mcnemar_exact, paired_bootstrap_ci

if TYPE_CHECKING:
    from mmspubench.eval.analysis.compare.interventions import InterventionPair

OVERALL = "Overall"
"""Name of the group holding every item."""
GROUPS: tuple[str, ...] = (OVERALL, *(t.abbrev for t in SPURIOUS_TYPES))
"""Groups in output order: all items, then the nine types."""


@dataclass(frozen=True, slots=True)
class PairedRate:
    """A yes/no outcome (answer right, CGLA_acc) of both runs on one group of items."""

    n: int
    """Items in the group."""
    a: float
    """Run A's rate, in percent."""
    b: float
    """Run B's rate, in percent."""
    difference: float
    """``b - a``, in percentage points."""
    ci95: tuple[float, float]
    """Paired bootstrap 95% interval of ``difference``."""
    only_a: int
    """Items where A has the outcome and B does not (e.g. right in A only)."""
    only_b: int
    """Items where B has the outcome and A does not."""
    p_value: float
    """Two-sided exact McNemar p-value on ``only_a`` and ``only_b``."""
    p_adjusted: float | None = None
    """``p_value`` adjusted across the rows of its table (Holm, or Benjamini-Hochberg:
    :mod:`mmspubench.eval.analysis.compare.adjusted`); ``None`` before the adjustment."""


@dataclass(frozen=True, slots=True)
class PairedMean:
    """A real-valued outcome (CGLA_min) of both runs on one group of items."""

    n: int
    """Items in the group."""
    a: float
    """Run A's mean."""
    b: float
    """Run B's mean."""
    difference: float
    """Mean paired difference ``b - a``."""
    ci95: tuple[float, float]
    """Paired bootstrap 95% interval of ``difference``."""


@dataclass(frozen=True, slots=True)
class GroupComparison:
    """Both runs on one group: every item, or the items of one spurious type."""

    group: str
    """``Overall`` or a type abbreviation (``BG``, ``TN``, ...)."""
    n: int
    """Items in the group (0: a type the dataset has no item of; no figures then)."""
    accuracy: PairedRate | None
    """Answer accuracy; ``None`` when a run did not compute accuracy or the group is empty."""
    cgla_acc: PairedRate | None
    """CGLA_acc; ``None`` when a run did not compute CGLA or the group is empty."""
    cgla_min: PairedMean | None
    """Mean CGLA_min; ``None`` as ``cgla_acc``."""
    circular: PairedRate | None = None
    """Circular accuracy (all four rotations right); ``None`` unless both runs have rotations."""
    blind: PairedRate | None = None
    """Blind accuracy (the answer without the image); ``None`` unless both runs have it."""
    gain: PairedMean | None = None
    """Mean per-item gain ``100 * (correct - blind.correct)`` (percentage points); as ``blind``."""
    brier: PairedMean | None = None
    """Mean Brier score of the option probabilities; ``None`` unless both runs have calibration."""
    ece: PairedMean | None = None
    """ECE (15 bins) of each run and ``ECE(B) - ECE(A)`` with its paired bootstrap interval; as ``brier``."""
    interventions: tuple[InterventionPair, ...] = ()
    """Both runs under each intervention they share (:mod:`mmspubench.eval.analysis.compare.interventions`)."""


def paired_rate(a: Sequence[bool], b: Sequence[bool], seed: int, resamples: int) -> PairedRate:
    """Rates of both runs, their paired difference with its interval, and McNemar's test."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("a rate of zero items is undefined")
    only_a = int(np.sum((x == 1.0) & (y == 0.0)))
    only_b = int(np.sum((x == 0.0) & (y == 1.0)))
    low, high = paired_bootstrap_ci(100.0 * x, 100.0 * y, seed, resamples)
    rate_a, rate_b = 100.0 * float(x.mean()), 100.0 * float(y.mean())
    return PairedRate(
        n=len(x),
        a=rate_a,
        b=rate_b,
        difference=100.0 * float((y - x).mean()),
        ci95=(low, high),
        only_a=only_a,
        only_b=only_b,
        p_value=mcnemar_exact(only_a, only_b),
    )


def paired_mean(a: Sequence[float], b: Sequence[float], seed: int, resamples: int) -> PairedMean:
    """Means of both runs and their mean paired difference with its interval."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("a mean of zero items is undefined")
    return PairedMean(
        n=len(x),
        a=float(x.mean()),
        b=float(y.mean()),
        difference=float((y - x).mean()),
        ci95=paired_bootstrap_ci(x, y, seed, resamples),
    )


@dataclass(frozen=True, slots=True)
class Pair:
    """One item as both runs recorded it."""

    types: tuple[str, ...]
    """Canonical spurious-type names of the item."""
    a: SampleResult
    """Run A's record."""
    b: SampleResult
    """Run B's record."""


def _group_of(pairs: Sequence[Pair], group: str) -> list[Pair]:
    if group == OVERALL:
        return list(pairs)
    return [p for p in pairs if any(TYPE_ABBREV.get(t) == group for t in p.types)]


def _rate(
    pairs: Sequence[Pair], get: Callable[[SampleResult], bool | None], seed: int, resamples: int
) -> PairedRate | None:
    values = [(get(p.a), get(p.b)) for p in pairs]
    if not values or any(x is None or y is None for x, y in values):
        return None
    return paired_rate([bool(x) for x, _ in values], [bool(y) for _, y in values], seed, resamples)


def _mean(
    pairs: Sequence[Pair], get: Callable[[SampleResult], float | None], seed: int, resamples: int
) -> PairedMean | None:
    got = cc.values([p.a for p in pairs], [p.b for p in pairs], get)
    return None if got is None else paired_mean(got[0], got[1], seed, resamples)


def _ece(pairs: Sequence[Pair], seed: int, resamples: int) -> PairedMean | None:
    got = cc.paired_ece([p.a for p in pairs], [p.b for p in pairs], seed, resamples)
    if got is None:
        return None
    a, b, ci = got
    return PairedMean(n=len(pairs), a=a, b=b, difference=b - a, ci95=ci)


def compare_group(
    pairs: Sequence[Pair], group: str, seed: int, resamples: int, shared: Sequence[str] = ()
) -> GroupComparison:
    """Both runs on the items of ``group`` (``Overall`` or a type abbreviation); ``shared``: the
    interventions both runs asked every item under."""
    from mmspubench.eval.analysis.compare.interventions import group_pairs

    chosen = _group_of(pairs, group)
    mins = [(p.a.cgla_min, p.b.cgla_min) for p in chosen]
    has_cgla = bool(mins) and all(x is not None and y is not None for x, y in mins)
    return GroupComparison(
        circular=_rate(chosen, cc.circular_correct, seed, resamples),
        blind=_rate(chosen, cc.blind_correct, seed, resamples),
        gain=_mean(chosen, cc.item_gain, seed, resamples),
        brier=_mean(chosen, cc.item_brier, seed, resamples),
        ece=_ece(chosen, seed, resamples),
        interventions=group_pairs(chosen, shared, seed, resamples),
        group=group,
        n=len(chosen),
        accuracy=_rate(chosen, lambda s: s.correct, seed, resamples),
        cgla_acc=_rate(chosen, lambda s: s.cgla_acc, seed, resamples) if has_cgla else None,
        cgla_min=paired_mean(
            [float(x) for x, _ in mins if x is not None],
            [float(y) for _, y in mins if y is not None],
            seed,
            resamples,
        )
        if has_cgla
        else None,
    )


def compare_pairs(
    pairs: Sequence[Pair], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[GroupComparison, ...]:
    """Every group in :data:`GROUPS` order; pairs must be in a fixed order (the runs' item ids sorted)."""
    if not pairs:
        raise ValueError("a comparison of zero items is undefined")
    for pair in pairs:
        unknown = [t for t in pair.types if t not in TYPE_ABBREV]
        if unknown:
            raise ValueError(f"unknown spurious type {unknown[0]!r}; expected one of {sorted(TYPE_ABBREV)}")
    from mmspubench.eval.analysis.compare.interventions import compared_names

    shared = compared_names(pairs)
    return tuple(compare_group(pairs, group, seed, resamples, shared) for group in GROUPS)


CONFOUND_FIGURES = ("circular", "blind", "gain", "brier", "ece")
"""Figures of the confound views: in a group's JSON only when both runs have them (the comparison
of two runs without them is the JSON of before, key for key)."""


def group_to_json(group: GroupComparison) -> dict[str, Any]:
    """JSON-ready dict of one group (intervals as two-element lists)."""
    from mmspubench.eval.analysis.compare.interventions import to_json

    out = asdict(group)
    for key in CONFOUND_FIGURES:
        if out[key] is None:
            del out[key]
    del out["interventions"]
    for value in out.values():
        if isinstance(value, dict):
            value["ci95"] = list(value["ci95"])
    if group.interventions:  # only when both runs hold some: the JSON of before otherwise
        out["interventions"] = to_json(group.interventions)
    return out
