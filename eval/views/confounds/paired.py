"""Paired statistics of two outcomes on the same items: the paired bootstrap and exact McNemar.

Shared by the run (the blind baseline's ``gain``: with the image against without) and by
``compare`` (two runs). Plain numpy and integer arithmetic; the conventions of
:mod:`mmspubench.eval.metrics` (95% percentile intervals, ``seed``-reproducible).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import comb

import numpy as np
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES, CI_LEVEL


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (binomial test, p = 1/2).

    ``only_a``: items right in A and wrong in B; ``only_b``: the reverse. With no discordant item
    the runs cannot be told apart: p = 1.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be non-negative, got {only_a}, {only_b}")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(only_a, only_b) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def paired_bootstrap_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float]:
    """Percentile 95% interval of ``mean(b) - mean(a)``, items resampled with both values together."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    if len(a) == 0:
        raise ValueError("bootstrap interval of zero items is undefined")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(diff), size=(resamples, len(diff)))
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(diff[draws].mean(axis=1), [alpha, 1.0 - alpha])
    return float(low), float(high)
