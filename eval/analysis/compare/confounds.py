"""The confound figures of ``compare``: circular accuracy, blind accuracy, gain, Brier and ECE, paired.

Each figure is read per item from the two runs' records (samples.jsonl), so it is paired like
accuracy (:mod:`mmspubench.eval.analysis.compare.paired`):

- **circular**: an item is right when all four rotations are (``rotations[*].correct``);
- **blind**: the answer without the image (``blind.correct``);
- **gain**: per item ``100 * (correct - blind.correct)``; its mean is the run's ``blind.gain``, and
  the comparison is the mean paired difference of the gains (percentage points);
- **brier**: per item ``sum_k (p_k - y_k)^2`` of ``option_probs``; its mean is the run's Brier;
- **ece**: not a mean over items, so its interval is a paired bootstrap of ``ECE(B) - ECE(A)``
  over the same resampled items (the draws of :func:`~mmspubench.eval.views.confounds.paired.paired_bootstrap_ci`).

A figure is compared only when both runs hold it for every item of the group; otherwise ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.metrics import CI_LEVEL
from mmspubench.eval.records import SampleResult
from mmspubench.eval.views.confounds.calibration import ECE_BINS, ece
from mmspubench.eval.views.confounds.metrics import ROTATIONS, rotated_answer


def _bad(sample: SampleResult, field: str, why: str) -> MMSpuBenchError:
    return MMSpuBenchError(f"samples: record {sample.id!r}: field {field!r}: {why}")


def circular_correct(sample: SampleResult) -> bool | None:
    """All four rotations right (an unparsed rotation is wrong); ``None`` without rotations. A record
    whose rotations are not 0-3 in order, or whose ``correct`` does not follow from the shown
    prediction and gold letter, is refused (an edited file is not counted)."""
    if sample.rotations is None:
        return None
    if tuple(r.rotation for r in sample.rotations) != ROTATIONS:
        raise _bad(sample, "rotations", f"expected rotations {list(ROTATIONS)} in order")
    for r in sample.rotations:
        if r.answer != rotated_answer(sample.answer, r.rotation) or r.reply.correct != (
            r.reply.prediction == r.answer
        ):
            raise _bad(sample, "rotations.correct", f"rotation {r.rotation} does not follow from itself")
    return all(r.reply.correct for r in sample.rotations)


def blind_correct(sample: SampleResult) -> bool | None:
    """The blind answer is right; ``None`` without a blind answer (``correct`` checked as above)."""
    if sample.blind is None:
        return None
    if sample.blind.correct != (sample.blind.prediction == sample.answer):
        raise _bad(sample, "blind.correct", "does not follow from prediction and answer")
    return sample.blind.correct


def item_gain(sample: SampleResult) -> float | None:
    """``100 * (correct - blind.correct)`` in percentage points; ``None`` without both."""
    if sample.blind is None or sample.correct is None:
        return None
    return 100.0 * (float(sample.correct) - float(sample.blind.correct))


def _probs(sample: SampleResult) -> tuple[float, ...] | None:
    probs = sample.option_probs
    if probs is not None and (
        len(probs) != len(ANSWER_LETTERS) or min(probs) < 0.0 or abs(sum(probs) - 1.0) > 1e-6
    ):
        raise _bad(sample, "option_probs", f"expected {len(ANSWER_LETTERS)} probabilities summing to 1")
    return probs


def item_brier(sample: SampleResult) -> float | None:
    """Brier score of one item's option probabilities; ``None`` without them."""
    if _probs(sample) is None or sample.option_probs is None:
        return None
    gold = ANSWER_LETTERS.index(sample.answer)
    return float(sum((p - (1.0 if k == gold else 0.0)) ** 2 for k, p in enumerate(sample.option_probs)))


def values(
    a: Sequence[SampleResult], b: Sequence[SampleResult], get: Callable[[SampleResult], float | None]
) -> tuple[list[float], list[float]] | None:
    """``get`` of every item in both runs, or ``None`` when a run lacks it for some item."""
    x, y = [get(s) for s in a], [get(s) for s in b]
    if not x or any(v is None for v in x) or any(v is None for v in y):
        return None
    return [float(v) for v in x if v is not None], [float(v) for v in y if v is not None]


def _ece_of_resamples(probs: np.ndarray, gold: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """ECE of every resample (rows of ``draws``): ``sum_b |hits_b - confidence_b| / N`` per row,
    the same figure as :func:`~mmspubench.eval.views.confounds.calibration.ece` (its bins, first-of-ties argmax)."""
    confidence = probs.max(axis=1)
    hit = (probs.argmax(axis=1) == gold).astype(np.float64)
    bins = np.minimum((confidence * ECE_BINS).astype(int), ECE_BINS - 1)
    rows = np.repeat(np.arange(draws.shape[0]), draws.shape[1])
    hits = np.zeros((draws.shape[0], ECE_BINS))
    conf = np.zeros((draws.shape[0], ECE_BINS))
    np.add.at(hits, (rows, bins[draws].ravel()), hit[draws].ravel())
    np.add.at(conf, (rows, bins[draws].ravel()), confidence[draws].ravel())
    out: np.ndarray = np.abs(hits - conf).sum(axis=1) / draws.shape[1]
    return out


def paired_ece(
    a: Sequence[SampleResult], b: Sequence[SampleResult], seed: int, resamples: int
) -> tuple[float, float, tuple[float, float]] | None:
    """ECE of A, of B and the paired bootstrap 95% interval of ``ECE(B) - ECE(A)``; ``None`` unless
    both runs have option probabilities for every item."""
    if not a or any(_probs(s) is None for s in (*a, *b)):
        return None
    gold = np.asarray([ANSWER_LETTERS.index(s.answer) for s in a])
    pa = np.asarray([s.option_probs for s in a], dtype=np.float64)
    pb = np.asarray([s.option_probs for s in b], dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(gold), size=(resamples, len(gold)))
    diff = _ece_of_resamples(pb, gold, draws) - _ece_of_resamples(pa, gold, draws)
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(diff, [alpha, 1.0 - alpha])
    return ece(pa, gold), ece(pb, gold), (float(low), float(high))
