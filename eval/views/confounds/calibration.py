"""Calibration of the option probabilities (``logprob`` mode): Brier score and ECE, in numpy.

- The option probabilities of an item are the softmax of its four letter scores
  (log-likelihoods), computed in float64 (:func:`option_probs`).
- **Brier** = mean over items of ``sum_k (p_k - y_k)^2`` (``y``: one-hot of the gold letter);
  0 is perfect, 2 the worst.
- **ECE** (15 equal-width bins over the confidence ``max_k p_k``, bin ``b`` holding
  ``[b/15, (b+1)/15)``, the last one closed) = ``sum_b (n_b / N) |acc_b - conf_b|``, where the
  predicted letter is the argmax (the first of tied letters, as the run's prediction).

Both as fractions (not percent), with percentile bootstrap 95% intervals over items, seeded like
every interval of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES, CI_LEVEL

ECE_BINS = 15
"""Equal-width confidence bins of the ECE."""


def option_probs(scores: Sequence[float]) -> tuple[float, ...]:
    """Softmax of the letter scores (float64, max-shifted)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.shape != (len(ANSWER_LETTERS),) or not np.all(np.isfinite(values)):
        raise ValueError(f"expected {len(ANSWER_LETTERS)} finite option scores, got {list(scores)}")
    shifted = np.exp(values - values.max())
    return tuple(float(p) for p in shifted / shifted.sum())


def _arrays(probs: Sequence[Sequence[float]], answers: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    if len(probs) == 0:
        raise ValueError("calibration of zero items is undefined")
    p = np.asarray(probs, dtype=np.float64)
    gold = np.asarray([ANSWER_LETTERS.index(a) for a in answers])
    return p, gold


def brier(p: np.ndarray, gold: np.ndarray) -> float:
    """Multi-class Brier score of probability rows ``p`` against gold indices."""
    onehot = np.zeros_like(p)
    onehot[np.arange(len(gold)), gold] = 1.0
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


def _bin_index(confidence: np.ndarray) -> np.ndarray:
    return np.minimum((confidence * ECE_BINS).astype(int), ECE_BINS - 1)


def ece(p: np.ndarray, gold: np.ndarray) -> float:
    """Expected calibration error over :data:`ECE_BINS` equal-width confidence bins."""
    confidence = p.max(axis=1)
    hit = (p.argmax(axis=1) == gold).astype(np.float64)
    bins = _bin_index(confidence)
    total = 0.0
    for b in range(ECE_BINS):
        inside = bins == b
        if inside.any():
            total += inside.mean() * abs(hit[inside].mean() - confidence[inside].mean())
    return float(total)


def reliability_bins(p: np.ndarray, gold: np.ndarray) -> list[dict[str, Any]]:
    """Every bin: ``low``, ``high``, ``n``, ``accuracy`` and ``confidence`` (``None`` when empty)."""
    confidence = p.max(axis=1)
    hit = (p.argmax(axis=1) == gold).astype(np.float64)
    bins = _bin_index(confidence)
    out = []
    for b in range(ECE_BINS):
        inside = bins == b
        n = int(inside.sum())
        out.append(
            {
                "low": b / ECE_BINS,
                "high": (b + 1) / ECE_BINS,
                "n": n,
                "accuracy": float(hit[inside].mean()) if n else None,
                "confidence": float(confidence[inside].mean()) if n else None,
            }
        )
    return out


def bootstrap_stat(
    p: np.ndarray,
    gold: np.ndarray,
    stat: Callable[[np.ndarray, np.ndarray], float],
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> list[float]:
    """Percentile 95% interval of ``stat`` over items resampled with replacement (``seed``)."""
    draws = np.random.default_rng(seed).integers(0, len(gold), size=(resamples, len(gold)))
    values = [stat(p[d], gold[d]) for d in draws]
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(np.asarray(values), [alpha, 1.0 - alpha])
    return [float(low), float(high)]


def calibration_summary(
    probs: Sequence[Sequence[float]], answers: Sequence[str], seed: int
) -> dict[str, Any]:
    """results.json ``calibration``: brier, ece, their intervals, the bins and ``n``."""
    p, gold = _arrays(probs, answers)
    return {
        "brier": brier(p, gold),
        "ece": ece(p, gold),
        "ci95": {"brier": bootstrap_stat(p, gold, brier, seed), "ece": bootstrap_stat(p, gold, ece, seed)},
        "bins": reliability_bins(p, gold),
        "n_bins": ECE_BINS,
        "n": len(gold),
    }
