"""Krippendorff's alpha for ratings (interval and ordinal metrics), numpy only.

alpha = 1 - D_o / D_e over the pairable values (units rated by at least two annotators):
D_o = (1/n) * sum_u 1/(m_u - 1) * sum over ordered pairs i != j within unit u of delta(v_i, v_j),
D_e = 1/(n (n - 1)) * sum over ordered pairs of distinct positions among all n pairable values.
Interval: delta(c, k) = (c - k)^2. Ordinal: delta(c, k) = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2,
with n_g the number of pairable values equal to g (Krippendorff 2011, "Computing Krippendorff's
alpha-reliability").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METRICS = ("interval", "ordinal")


def _delta(values: np.ndarray, counts: dict[float, int], metric: str) -> np.ndarray:
    """Pairwise distance matrix between ``values`` under ``metric``."""
    if metric == "interval":
        return (values[:, None] - values[None, :]) ** 2
    levels = sorted(counts)
    cum = np.cumsum([counts[g] for g in levels], dtype=float)
    position = {g: i for i, g in enumerate(levels)}

    def between(c: float, k: float) -> float:
        lo, hi = sorted((position[c], position[k]))
        total = cum[hi] - (cum[lo - 1] if lo > 0 else 0.0)
        return float((total - (counts[c] + counts[k]) / 2) ** 2)

    return np.array([[between(c, k) for k in values] for c in values])


def krippendorff_alpha(units: Sequence[Sequence[float]], metric: str = "interval") -> float | None:
    """Alpha over ``units`` (each: the ratings one item got); ``None`` when it is undefined
    (fewer than two pairable values, or no variation at all)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    pairable = [np.asarray(u, dtype=float) for u in units if len(u) >= 2]
    if not pairable:
        return None
    values = np.concatenate(pairable)
    n = len(values)
    uniq, freq = np.unique(values, return_counts=True)
    counts = {float(g): int(c) for g, c in zip(uniq, freq, strict=True)}
    d_all = _delta(values, counts, metric)
    expected = d_all.sum() / (n * (n - 1))
    if expected == 0:
        return None
    observed = 0.0
    start = 0
    for unit in pairable:
        m = len(unit)
        block = d_all[start : start + m, start : start + m]
        observed += block.sum() / (m - 1)
        start += m
    observed /= n
    return float(1.0 - observed / expected)
