"""The plain pairwise computation of Krippendorff's alpha, the reference of the coincidence form.

Every pairable value against every other (an n x n distance matrix), exactly as the definition
reads: D_o sums each unit's ordered pairs of distinct positions, weighted 1/(m_u - 1); D_e sums the
ordered pairs of distinct positions among all n pairable values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pairwise_alpha(units: Sequence[Sequence[float]], metric: str) -> float | None:
    """Alpha from all pairs of values (quadratic in the number of ratings)."""
    pairable = [np.asarray(u, dtype=float) for u in units if len(u) >= 2]
    if not pairable:
        return None
    values = np.concatenate(pairable)
    n = len(values)
    levels, counts = np.unique(values, return_counts=True)
    n_g = dict(zip(levels.tolist(), counts.tolist(), strict=True))

    def delta(c: float, k: float) -> float:
        if metric == "interval":
            return (c - k) ** 2
        lo, hi = min(c, k), max(c, k)
        between = sum(count for g, count in n_g.items() if lo <= g <= hi)
        return float((between - (n_g[c] + n_g[k]) / 2) ** 2)

    d_all = np.array([[delta(c, k) for k in values] for c in values])
    expected = d_all.sum() / (n * (n - 1))
    if expected == 0:
        return None
    observed, start = 0.0, 0
    for unit in pairable:
        m = len(unit)
        observed += d_all[start : start + m, start : start + m].sum() / (m - 1)
        start += m
    return float(1.0 - observed / n / expected)
