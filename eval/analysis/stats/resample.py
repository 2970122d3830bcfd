"""Bootstrap resampling of items, or of clusters of items, shared by every run of a table.

Every run of a table is resampled with the same draws (a paired bootstrap): a resample is one
multiset of items, and each run's mean is taken over it. Where one source image yields several
asked images (interventions, counterfactuals, the four rotations) the asked images are not
independent; with ``clusters`` (one label per item, e.g. the source item id) a resample draws
whole clusters with replacement and each run's mean is over every item of the drawn clusters:

    for r = 1..R:  draw C cluster indices with replacement (C clusters),
                   m_r = sum of the drawn clusters' values / number of their items

With one item per cluster this is the item bootstrap of :func:`mmspubench.eval.metrics.bootstrap_ci`,
draw for draw (same seed, same interval).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES, CI_LEVEL


def cluster_index(labels: Sequence[Hashable]) -> np.ndarray:
    """Each item's cluster as an index 0..C-1, clusters numbered in the order first met."""
    seen: dict[Hashable, int] = {}
    return np.asarray([seen.setdefault(label, len(seen)) for label in labels], dtype=np.int64)


def _matrix(values: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] == 0:
        raise ValueError("values must be runs x items with at least one item")
    return data


def resampled_means(
    values: Sequence[Sequence[float]] | np.ndarray,
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    clusters: Sequence[Hashable] | None = None,
) -> np.ndarray:
    """Each run's mean over each resample, ``resamples x runs``; ``values`` is runs x items, all
    runs resampled with the same draws (of items, or of ``clusters``: one label per item)."""
    data = _matrix(values)
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    n_items = data.shape[1]
    index = np.arange(n_items) if clusters is None else cluster_index(clusters)
    if len(index) != n_items:
        raise ValueError(f"clusters must label every item: {len(index)} labels for {n_items} items")
    n_clusters = int(index.max()) + 1
    sums = np.zeros((n_clusters, data.shape[0]))
    np.add.at(sums, index, data.T)
    sizes = np.bincount(index, minlength=n_clusters).astype(np.float64)
    draws = np.random.default_rng(seed).integers(0, n_clusters, size=(resamples, n_clusters))
    # How often each cluster is drawn: the resample's sums are then one exact matrix product.
    flat = (np.arange(resamples)[:, None] * n_clusters + draws).ravel()
    counts = np.bincount(flat, minlength=resamples * n_clusters).reshape(resamples, n_clusters)
    counts = counts.astype(np.float64)
    return (counts @ sums) / (counts @ sizes)[:, None]


def percentile_interval(means: np.ndarray) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of resampled means."""
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def clustered_ci(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float]:
    """Percentile 95% interval of ``100 * mean(values)`` (percent), clusters resampled as wholes."""
    if len(values) == 0:
        raise ValueError("bootstrap interval of zero items is undefined")
    means = resampled_means([values], seed, resamples, clusters)[:, 0]
    return percentile_interval(100.0 * means)


def bootstrap_p_value(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> float:
    """Two-sided bootstrap p-value of ``mean(b) - mean(a) = 0`` from the draws of
    :func:`mmspubench.eval.views.confounds.paired.paired_bootstrap_ci` (same seed, same draws)::

        p = min(1, 2 * (min(#{D_r <= 0}, #{D_r >= 0}) + 1) / (R + 1))

    the inversion of the percentile interval (below 0.05 about when the 95% interval leaves out 0),
    never 0 (the ``+ 1``: the observed data count as one resample). For a mean without an exact
    test (the change under an intervention)."""
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"paired values need equal, non-zero lengths, got {len(a)} and {len(b)}")
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[draws].mean(axis=1)
    tail = min(int(np.sum(means <= 0.0)), int(np.sum(means >= 0.0)))
    return min(1.0, 2.0 * (tail + 1) / (resamples + 1))
