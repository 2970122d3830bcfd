"""The confound views of a run: circular evaluation, the blind baseline and the worst type, in numpy.

docs/metrics/confounds.md gives the definitions; in short:

- **Rotation** ``k`` (0-3) shows the option of published position ``j`` at position
  ``(j + k) mod 4``, so the letter shown at position ``p`` holds published option ``(p - k) mod 4``
  and the gold letter moves with its option. Rotation 0 is the published order.
- **Circular**: an item is correct only when all four rotations are (VLMEvalKit's rule; an
  unparsed answer is wrong).
- **Blind**: the same prompt without the image; ``gain`` = accuracy with minus without, paired.
- **Worst type**: the lowest per-type accuracy among types with at least :data:`WORST_MIN_ITEMS`
  items; ``worst_gap`` = Average minus it.

Every function takes plain per-item values, so ``results.recompute`` rebuilds each figure from
samples.jsonl exactly. Percentages as in :mod:`mmspubench.eval.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, NUM_OPTIONS
from mmspubench.eval import metrics
from mmspubench.eval.views.confounds.paired import mcnemar_exact, paired_bootstrap_ci

ROTATIONS: tuple[int, ...] = tuple(range(NUM_OPTIONS))
"""The four cyclic rotations, rotation 0 first (the published order)."""
WORST_MIN_ITEMS = 10
"""A type counts for the worst type only with at least this many items."""
UNPARSED = "unparsed"
"""Key of ``letter_share`` for answers that named no option."""


def rotation_order(k: int) -> tuple[int, ...]:
    """Published option index shown at each position A-D in rotation ``k``."""
    if k not in ROTATIONS:
        raise ValueError(f"rotation must be one of {ROTATIONS}, got {k!r}")
    return tuple((p - k) % NUM_OPTIONS for p in range(NUM_OPTIONS))


def rotated_options(options: Sequence[str], k: int) -> tuple[str, ...]:
    """The options as shown in rotation ``k``."""
    return tuple(options[j] for j in rotation_order(k))


def rotated_answer(answer: str, k: int) -> str:
    """The gold letter in rotation ``k`` (the gold option moves from ``j`` to ``(j + k) mod 4``)."""
    return ANSWER_LETTERS[(ANSWER_LETTERS.index(answer) + k) % NUM_OPTIONS]


@dataclass(frozen=True, slots=True)
class RotationAnswer:
    """One rotation of one item as the summary sees it."""

    rotation: int
    """``k`` (0-3)."""
    answer: str
    """Gold letter shown in this rotation."""
    prediction: str | None
    """Chosen letter; ``None`` when unparsed."""

    @property
    def correct(self) -> bool:
        """Whether the chosen letter is the gold one (unparsed is wrong)."""
        return self.prediction == self.answer

    @property
    def chosen_option(self) -> int | None:
        """Published index of the chosen option, ``None`` when unparsed."""
        if self.prediction is None:
            return None
        return rotation_order(self.rotation)[ANSWER_LETTERS.index(self.prediction)]


def chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution, exact for integer ``df`` >= 1.

    Q(df/2, x/2) in closed form: for even df ``exp(-y) sum_{i<df/2} y^i / i!``; for odd df
    ``erfc(sqrt(y)) + exp(-y) sum_{i=1}^{(df-1)/2} y^(i-1/2) / Gamma(i+1/2)``, with ``y = x/2``.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if x <= 0.0:
        return 1.0
    y = x / 2.0
    if df % 2 == 0:
        terms = [i * math.log(y) - math.lgamma(i + 1) for i in range(df // 2)]
        return min(1.0, sum(math.exp(t - y) for t in terms))
    tail = sum(math.exp((i - 0.5) * math.log(y) - y - math.lgamma(i + 0.5)) for i in range(1, (df + 1) // 2))
    return min(1.0, math.erfc(math.sqrt(y)) + tail)


def chi2_goodness_of_fit(observed: Sequence[int], expected_share: Sequence[float]) -> float:
    """p-value of observed counts against expected shares (categories of share 0 left out;
    a count where the share is 0 gives p = 0). ``None``-free: no observation gives p = 1."""
    total = sum(observed)
    if total == 0:
        return 1.0
    stat, df = 0.0, -1
    for count, share in zip(observed, expected_share, strict=True):
        if share <= 0.0:
            if count:
                return 0.0
            continue
        expected = total * share
        stat += (count - expected) ** 2 / expected
        df += 1
    return 1.0 if df < 1 else chi2_sf(stat, df)


def letter_share(rotations: Sequence[Sequence[RotationAnswer]]) -> dict[str, float]:
    """Share (0-1) of all rotation answers per letter A-D, and of unparsed ones."""
    answers = [r for item in rotations for r in item]
    if not answers:
        raise ValueError("letter shares of zero answers are undefined")
    out = {letter: sum(r.prediction == letter for r in answers) / len(answers) for letter in ANSWER_LETTERS}
    out[UNPARSED] = sum(r.prediction is None for r in answers) / len(answers)
    return out


def position_bias_p(rotations: Sequence[Sequence[RotationAnswer]]) -> float:
    """Chi-square p-value of the chosen letters (parsed answers) against the gold letters' distribution."""
    answers = [r for item in rotations for r in item]
    chosen = [sum(r.prediction == letter for r in answers) for letter in ANSWER_LETTERS]
    gold = np.asarray([sum(r.answer == letter for r in answers) for letter in ANSWER_LETTERS], dtype=float)
    return chi2_goodness_of_fit(chosen, list(gold / gold.sum()))


def worst_type(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{type, value, ci95}`` of the lowest per-type accuracy among types with >= 10 items, or
    ``None`` when no type has that many; read from an accuracy-like section (``by_type``,
    ``n_by_type``, ``ci95.by_type``). Ties: the first in the paper's type order."""
    by_type, n_by_type = summary["by_type"], summary["n_by_type"]
    eligible = [t for t, v in by_type.items() if v is not None and n_by_type.get(t, 0) >= WORST_MIN_ITEMS]
    if not eligible:
        return None
    worst = min(eligible, key=lambda t: by_type[t])
    return {"type": worst, "value": by_type[worst], "ci95": summary["ci95"]["by_type"][worst]}


def with_worst(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with ``worst_type`` and ``worst_gap`` (Average minus worst; ``None`` without one)."""
    worst = worst_type(summary)
    gap = None if worst is None else summary["average"] - worst["value"]
    return {**summary, "worst_type": worst, "worst_gap": gap}


def circular_summary(
    types: Sequence[tuple[str, ...]], rotations: Sequence[Sequence[RotationAnswer]], seed: int
) -> dict[str, Any]:
    """results.json ``circular`` from each item's four rotations (rotation 0 first)."""
    if not rotations:
        raise ValueError("circular accuracy of zero items is undefined")
    for item in rotations:
        if tuple(r.rotation for r in item) != ROTATIONS:
            raise ValueError(
                f"an item needs rotations {ROTATIONS} in order, got {[r.rotation for r in item]}"
            )
    all_right = [all(r.correct for r in item) for item in rotations]
    scored = [metrics.Scored(t, 1.0 if ok else 0.0) for t, ok in zip(types, all_right, strict=True)]
    base = with_worst(metrics.accuracy_summary(scored, 0, seed))
    chosen = [{r.chosen_option for r in item} for item in rotations]
    return {
        "accuracy": base["overall"],
        "average": base["average"],
        "by_type": base["by_type"],
        "ci95": {"accuracy": base["ci95"]["overall"], "by_type": base["ci95"]["by_type"]},
        "worst_type": base["worst_type"],
        "worst_gap": base["worst_gap"],
        "vanilla_accuracy": metrics.percent([item[0].correct for item in rotations]),
        "rotation_accuracy": metrics.percent([r.correct for item in rotations for r in item]),
        "consistency": metrics.percent([len(c) == 1 and None not in c for c in chosen]),
        "letter_share": letter_share(rotations),
        "position_bias_p": position_bias_p(rotations),
        "unparsed": sum(r.prediction is None for item in rotations for r in item),
        "n": base["n"],
        "n_by_type": base["n_by_type"],
    }


def blind_summary(
    ids: Sequence[str],
    types: Sequence[tuple[str, ...]],
    with_image: Sequence[bool],
    blind: Sequence[bool],
    seed: int,
    image: str,
    unparsed: int = 0,
) -> dict[str, Any]:
    """results.json ``blind``: accuracy without the image and the paired gain of the image."""
    if not ids:
        raise ValueError("blind accuracy of zero items is undefined")
    scored = [metrics.Scored(t, 1.0 if ok else 0.0) for t, ok in zip(types, blind, strict=True)]
    base = metrics.accuracy_summary(scored, unparsed, seed)
    seen = np.asarray(with_image, dtype=np.float64) * 100.0
    unseen = np.asarray(blind, dtype=np.float64) * 100.0
    only_image = int(np.sum((seen > 0) & (unseen == 0)))
    only_blind = int(np.sum((seen == 0) & (unseen > 0)))
    low, high = paired_bootstrap_ci(unseen, seen, seed)
    return {
        "accuracy": base["overall"],
        "average": base["average"],
        "by_type": base["by_type"],
        "ci95": {"accuracy": base["ci95"]["overall"], "by_type": base["ci95"]["by_type"]},
        "gain": float(np.mean(seen - unseen)),
        "gain_ci95": [low, high],
        "gain_p_value": mcnemar_exact(only_image, only_blind),
        "only_with_image": only_image,
        "only_blind": only_blind,
        "answerable_blind": [i for i, ok in zip(ids, blind, strict=True) if ok],
        "image": image,
        "unparsed": base["unparsed"],
        "n": base["n"],
        "n_by_type": base["n_by_type"],
    }
