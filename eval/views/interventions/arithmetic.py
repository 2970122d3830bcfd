"""The figures of one intervention: the paired change of the answers when the image is changed.

Every figure pairs each item's answer to its published image (``vanilla``) with its answer to the
changed image, on the same items (the conventions of :mod:`mmspubench.eval.metrics`: percentages,
95% percentile bootstrap intervals reproducible from ``seed``, the nine types with ``None`` where a
type has no item):

- ``change``: accuracy under the intervention minus vanilla accuracy, in percentage points, with a
  paired bootstrap interval and the exact McNemar p-value of the discordant items; per type too;
- ``flip_rate``: the share of items whose answer changes (an unparsed answer is an answer);
- ``targeted_contrast``: the change on the items of the types the intervention targets minus the
  change on the other items, with a stratified bootstrap interval (each group resampled on its
  own). A channel the model relies on shows a contrast; a general loss of image quality moves both
  groups alike. ``None`` when either group is empty;
- ``gold_prob_change`` (logprob mode): the mean change of the gold option's probability (softmax of
  the letter scores), on the 0-1 scale, with a paired interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.eval import metrics
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES, CI_LEVEL, Scored
from mmspubench.eval.views.confounds import calibration as metrics_calibration
from mmspubench.eval.views.confounds.paired import mcnemar_exact, paired_bootstrap_ci

Types = Sequence[tuple[str, ...]]


def _groups(types: Types) -> dict[str, list[int]]:
    """Item indices per type abbreviation (all nine types; an item with two types is in both)."""
    groups = metrics.group_by_type([Scored(t, float(i)) for i, t in enumerate(types)])
    return {k: [int(v) for v in vals] for k, vals in groups.items()}


def _gain(vanilla: np.ndarray, changed: np.ndarray, seed: int) -> tuple[float, list[float]]:
    low, high = paired_bootstrap_ci(vanilla, changed, seed)
    return float(100.0 * np.mean(changed - vanilla)), [100.0 * low, 100.0 * high]


def paired_change(
    types: Types, vanilla: Sequence[bool], changed: Sequence[bool], seed: int
) -> dict[str, Any]:
    """``change``: the paired gain of the changed image over the published one (percentage points)."""
    if len(vanilla) == 0:
        raise ValueError("the change of zero items is undefined")
    v = np.asarray(vanilla, dtype=np.float64)
    c = np.asarray(changed, dtype=np.float64)
    gain, interval = _gain(v, c, seed)
    only_vanilla = int(np.sum((v > 0) & (c == 0)))
    only_changed = int(np.sum((v == 0) & (c > 0)))
    by_type: dict[str, float | None] = {}
    ci_by_type: dict[str, list[float] | None] = {}
    for abbrev, index in _groups(types).items():
        if index:
            by_type[abbrev], ci_by_type[abbrev] = _gain(v[index], c[index], seed)
        else:
            by_type[abbrev] = ci_by_type[abbrev] = None
    return {
        "gain": gain,
        "ci95": interval,
        "mcnemar_p": mcnemar_exact(only_vanilla, only_changed),
        "only_vanilla": only_vanilla,
        "only_intervened": only_changed,
        "by_type": by_type,
        "ci95_by_type": ci_by_type,
        "n": len(vanilla),
    }


def flip_rates(
    types: Types, vanilla: Sequence[str | None], changed: Sequence[str | None]
) -> tuple[float, dict[str, float | None]]:
    """Percent of items whose prediction differs, overall and per type."""
    flips = [a != b for a, b in zip(vanilla, changed, strict=True)]
    by_type = {
        k: (metrics.percent([flips[i] for i in idx]) if idx else None) for k, idx in _groups(types).items()
    }
    return metrics.percent(flips), by_type


def targeted_contrast(
    targeted: Sequence[bool], vanilla: Sequence[bool], changed: Sequence[bool], seed: int
) -> dict[str, Any] | None:
    """Change on the targeted items minus change on the others (points), stratified bootstrap."""
    delta = 100.0 * (np.asarray(changed, dtype=np.float64) - np.asarray(vanilla, dtype=np.float64))
    mask = np.asarray(targeted, dtype=bool)
    inside, outside = delta[mask], delta[~mask]
    if len(inside) == 0 or len(outside) == 0:
        return None
    rng = np.random.default_rng(seed)
    draws_in = rng.integers(0, len(inside), size=(BOOTSTRAP_RESAMPLES, len(inside)))
    draws_out = rng.integers(0, len(outside), size=(BOOTSTRAP_RESAMPLES, len(outside)))
    contrasts = inside[draws_in].mean(axis=1) - outside[draws_out].mean(axis=1)
    alpha = (1.0 - CI_LEVEL) / 2.0
    low, high = np.quantile(contrasts, [alpha, 1.0 - alpha])
    return {
        "value": float(inside.mean() - outside.mean()),
        "ci95": [float(low), float(high)],
        "targeted_change": float(inside.mean()),
        "other_change": float(outside.mean()),
        "n_targeted": len(inside),
        "n_other": len(outside),
    }


def gold_prob(scores: Sequence[float], answer: str) -> float:
    """The gold option's probability: the softmax of the four letter scores at ``answer``."""
    return metrics_calibration.option_probs(scores)[ANSWER_LETTERS.index(answer)]


def gold_prob_change(
    vanilla: Sequence[Sequence[float]], changed: Sequence[Sequence[float]], answers: Sequence[str], seed: int
) -> dict[str, Any]:
    """Mean change of the gold option's probability (0-1 scale) with a paired interval."""
    before = np.asarray([gold_prob(s, a) for s, a in zip(vanilla, answers, strict=True)])
    after = np.asarray([gold_prob(s, a) for s, a in zip(changed, answers, strict=True)])
    low, high = paired_bootstrap_ci(before, after, seed)
    return {"mean": float(np.mean(after - before)), "ci95": [low, high]}


def cgla_change(types: Types, vanilla: Sequence[bool], changed: Sequence[bool], seed: int) -> dict[str, Any]:
    """CGLA_acc under the intervention (percent, per type) and its paired change (points)."""
    scored = [Scored(t, 1.0 if ok else 0.0) for t, ok in zip(types, changed, strict=True)]
    summary = metrics.accuracy_summary(scored, 0, seed)
    gain, interval = _gain(np.asarray(vanilla, dtype=np.float64), np.asarray(changed, dtype=np.float64), seed)
    return {"acc": summary["overall"], "by_type": summary["by_type"], "change": gain, "ci95": interval}
