"""Accuracy, bootstrap intervals and CGLA (paper section 4.3), in plain numpy.

Conventions:
- Accuracies are percentages (0-100) like the paper's Table 2.
- An item with two spurious types counts in both types' figures.
- Per-type figures are keyed by the table abbreviation (``BG``, ``TN``, ... ``Sha.``) and list all
  nine types; a type without items gets ``None`` (and ``n = 0``), never a silent 0.
- An empty input to a scalar metric raises ``ValueError``: there is no meaningful value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV

BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the bootstrap interval."""
CI_LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Scored:
    """One item's outcome as the aggregates see it."""

    types: tuple[str, ...]
    """Canonical spurious-type names of the item."""
    value: float
    """1.0/0.0 for a correct/wrong answer, or the item's CGLA_min."""


def percent(values: Sequence[bool]) -> float:
    """Share of true values, in percent."""
    if len(values) == 0:
        raise ValueError("accuracy of zero items is undefined")
    return 100.0 * float(np.mean(np.asarray(values, dtype=np.float64)))


def bootstrap_ci(
    values: Sequence[bool], seed: int, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of ``percent(values)``, reproducible from ``seed``."""
    if len(values) == 0:
        raise ValueError("bootstrap interval of zero items is undefined")
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(data), size=(resamples, len(data)))
    means = 100.0 * data[draws].mean(axis=1)
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def group_by_type(items: Sequence[Scored]) -> dict[str, list[float]]:
    """Values per type abbreviation, all nine types present (an item with two types lands in both)."""
    groups: dict[str, list[float]] = {t.abbrev: [] for t in SPURIOUS_TYPES}
    for item in items:
        for name in item.types:
            if name not in TYPE_ABBREV:
                raise ValueError(f"unknown spurious type {name!r}; expected one of {sorted(TYPE_ABBREV)}")
            groups[TYPE_ABBREV[name]].append(item.value)
    return groups


def reduce_core(cgls: Sequence[float], reduction: str) -> float:
    """One CGL from the core attributes' CGLs: ``best`` (max), ``mean`` or ``first``."""
    if len(cgls) == 0:
        raise ValueError("an item needs at least one core attribute for CGLA")
    if reduction == "best":
        return max(cgls)
    if reduction == "mean":
        return float(np.mean(np.asarray(cgls, dtype=np.float64)))
    if reduction == "first":
        return cgls[0]
    raise ValueError(f"core reduction must be 'best', 'mean' or 'first', got {reduction!r}")


def cgla_min(core_cgls: Sequence[float], spurious_cgls: Sequence[float], reduction: str) -> float:
    """CGLA_min = min over spurious t of CGL(core) - CGL(t) = CGL(core) - max spurious CGL."""
    if len(spurious_cgls) == 0:
        raise ValueError("an item needs at least one spurious attribute for CGLA")
    return reduce_core(core_cgls, reduction) - max(spurious_cgls)


def cgla_min_of(cgls: Sequence[float], kinds: Sequence[str], reduction: str) -> float:
    """CGLA_min of one item from its conditions' CGLs and kinds (``core``/``spurious``), in order."""
    core = [v for v, k in zip(cgls, kinds, strict=True) if k == "core"]
    spurious = [v for v, k in zip(cgls, kinds, strict=True) if k == "spurious"]
    return cgla_min(core, spurious, reduction)


def cgla_acc(value: float) -> bool:
    """CGLA_acc of one item: the unit step of CGLA_min (a tie counts as not robust)."""
    return value > 0.0


def _per_type(groups: Mapping[str, Sequence[Any]], fn: Any) -> dict[str, Any]:
    return {abbrev: (fn(vals) if vals else None) for abbrev, vals in groups.items()}


def type_average(by_type: Mapping[str, float | None]) -> float:
    """Table 2's ``Average``: the unweighted mean of the per-type accuracies of types with items.

    The paper's Average is a mean over the nine type columns, not the item-level accuracy: its
    Gemini 1.5 Pro row averages to 54.79 over the columns, while an item-level figure would sit
    near the background column (79.5% of items).
    """
    present = [value for value in by_type.values() if value is not None]
    if not present:
        raise ValueError("the type average of zero types is undefined")
    return float(np.mean(np.asarray(present, dtype=np.float64)))


def accuracy_summary(items: Sequence[Scored], unparsed: int, seed: int) -> dict[str, Any]:
    """results.json ``accuracy``: overall, average (over types), by_type, ci95, unparsed, n, n_by_type."""
    if not items:
        raise ValueError("accuracy of zero items is undefined")
    correct = [item.value == 1.0 for item in items]
    groups = group_by_type(items)
    as_bool = {k: [v == 1.0 for v in vals] for k, vals in groups.items()}
    by_type = _per_type(as_bool, percent)
    return {
        "overall": percent(correct),
        "average": type_average(by_type),
        "by_type": by_type,
        "ci95": {
            "overall": list(bootstrap_ci(correct, seed)),
            "by_type": _per_type(as_bool, lambda v: list(bootstrap_ci(v, seed))),
        },
        "unparsed": unparsed,
        "n": len(items),
        "n_by_type": {k: len(v) for k, v in groups.items()},
    }


def cgla_summary(items: Sequence[Scored], reduction: str, seed: int) -> dict[str, Any]:
    """results.json ``cgla`` from per-item CGLA_min values: acc, by_type, mean_cgla_min, n..."""
    if not items:
        raise ValueError("CGLA of zero items is undefined")
    hits = [cgla_acc(item.value) for item in items]
    groups = group_by_type(items)
    hits_by_type = {k: [cgla_acc(v) for v in vals] for k, vals in groups.items()}

    def mean(vals: Sequence[float]) -> float:
        return float(np.mean(np.asarray(vals, dtype=np.float64)))

    return {
        "acc": percent(hits),
        "by_type": _per_type(hits_by_type, percent),
        "ci95": {"acc": list(bootstrap_ci(hits, seed))},
        "mean_cgla_min": mean([item.value for item in items]),
        "mean_cgla_min_by_type": _per_type(groups, mean),
        "core_reduction": reduction,
        "n": len(items),
        "n_by_type": {k: len(v) for k, v in groups.items()},
    }
