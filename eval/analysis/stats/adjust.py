"""Adjusted p-values for a family of tests: Holm (family-wise error) and Benjamini-Hochberg (false
discovery rate).

A table of ``compare`` holds ten tests (overall and nine types); a multi-run comparison one per pair.
Reading each p-value against 0.05 alone claims about one false "win" in twenty by chance; the
adjusted values are read against 0.05 for the whole family. Both return values in the input order,
capped at 1, and equal statsmodels' ``multipletests(p, method="holm" | "fdr_bh")`` (the tests check it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HOLM = "holm"
"""Holm's step-down adjustment: controls the family-wise error rate (any false claim)."""
BH = "bh"
"""Benjamini-Hochberg's step-up adjustment: controls the false discovery rate."""
METHODS: tuple[str, ...] = (HOLM, BH)
"""The adjustments ``compare --adjust`` accepts."""
ALPHA = 0.05
"""The level an adjusted p-value is read against."""


def _checked(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("p-values must be a flat sequence")
    if np.any(np.isnan(p)) or np.any(p < 0.0) or np.any(p > 1.0):
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    return p


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm: sorted ascending, ``p_(i) * (m - i + 1)``, made non-decreasing, capped at 1."""
    p = _checked(p_values)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = scaled
    return [float(v) for v in out]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg: sorted ascending, ``p_(i) * m / i``, made non-increasing from the top, capped at 1."""
    p = _checked(p_values)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    scaled = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = scaled
    return [float(v) for v in out]


def adjust(p_values: Sequence[float], method: str = HOLM) -> list[float]:
    """The adjusted p-values of one family by ``method`` (:data:`METHODS`)."""
    if method == HOLM:
        return holm(p_values)
    if method == BH:
        return benjamini_hochberg(p_values)
    raise ValueError(f"adjustment must be one of {', '.join(METHODS)}, got {method!r}")


def adjust_present(p_values: Sequence[float | None], method: str = HOLM) -> list[float | None]:
    """:func:`adjust` over the values present; a missing test (``None``: a type without items) stays
    ``None`` and does not count in the family."""
    present = [p for p in p_values if p is not None]
    adjusted = iter(adjust(present, method))
    return [None if p is None else next(adjusted) for p in p_values]
