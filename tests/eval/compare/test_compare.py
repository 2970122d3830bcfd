"""Paired comparison statistics, checked against figures computed by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mmspubench.eval.analysis.compare import paired
from mmspubench.eval.analysis.compare.paired import Pair, mcnemar_exact, paired_bootstrap_ci, paired_rate

from tests.eval.compare_fakes import Item, sample

MCNEMAR_CASES = [
    # (right in A only, right in B only, p computed by hand: 2 * sum_{i<=min} C(n, i) / 2^n, capped at 1)
    {"b": 0, "c": 0, "p": 1.0},  # no discordant item: nothing to tell apart
    {"b": 0, "c": 5, "p": 2 * 1 / 32},  # 0.0625
    {"b": 5, "c": 0, "p": 0.0625},
    {"b": 1, "c": 9, "p": 2 * (1 + 10) / 1024},  # 0.021484375
    {"b": 0, "c": 10, "p": 2 / 1024},
    {"b": 3, "c": 1, "p": 2 * (1 + 4) / 16},  # 0.625
    {"b": 2, "c": 2, "p": 1.0},  # 2 * 11/16 > 1, capped
    {"b": 0, "c": 1, "p": 1.0},
    {"b": 2, "c": 8, "p": 2 * (1 + 10 + 45) / 1024},  # 0.109375
]


@pytest.mark.parametrize("case", MCNEMAR_CASES)
def test_mcnemar_exact_matches_hand_computed_p(case: dict[str, float]) -> None:
    assert mcnemar_exact(int(case["b"]), int(case["c"])) == pytest.approx(case["p"], rel=1e-12)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


def test_mcnemar_is_exact_for_many_discordant_items() -> None:
    # 60 vs 40 of 100: a float sum of tiny binomial terms would drift; the fraction does not.
    from fractions import Fraction
    from math import comb

    expected = float(2 * Fraction(sum(comb(100, i) for i in range(41)), 2**100))
    assert mcnemar_exact(60, 40) == expected
    assert 0.04 < expected < 0.06


def test_bootstrap_is_degenerate_when_every_resample_gives_the_same_difference() -> None:
    assert paired_bootstrap_ci([0.0] * 7, [100.0] * 7, seed=3) == (100.0, 100.0)
    same = [1.0, 0.0, 1.0, 1.0]
    assert paired_bootstrap_ci(same, same, seed=0) == (0.0, 0.0)
    # A constant shift of real values: every resample's mean difference is the shift.
    a = [0.3, -1.2, 2.5, 0.0, 4.0]
    low, high = paired_bootstrap_ci(a, [x + 0.5 for x in a], seed=1)
    assert low == pytest.approx(0.5) and high == pytest.approx(0.5)


def _quantile(sorted_values: list[float], q: float) -> float:
    # numpy's default (linear) rule, written out: position q * (R - 1) between two order statistics.
    pos = q * (len(sorted_values) - 1)
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (pos - low) * (sorted_values[high] - sorted_values[low])


def test_bootstrap_matches_a_plain_loop_reference() -> None:
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    b = [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    resamples, seed = 200, 7
    draws = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    diffs = []
    for row in draws.tolist():  # items resampled together: one index picks both outcomes
        diffs.append(sum(b[i] - a[i] for i in row) / len(row))
    diffs.sort()
    expected = (_quantile(diffs, 0.025), _quantile(diffs, 0.975))
    assert paired_bootstrap_ci(a, b, seed, resamples) == pytest.approx(expected, abs=1e-12)
    # Seeded: the same call gives the same interval, another seed (here) another one.
    assert paired_bootstrap_ci(a, b, seed, resamples) == paired_bootstrap_ci(a, b, seed, resamples)
    assert paired_bootstrap_ci(a, b, seed + 1, resamples) != paired_bootstrap_ci(a, b, seed, resamples)


def test_bootstrap_rejects_unpaired_or_empty_input() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1.0], [1.0, 0.0], seed=0)
    with pytest.raises(ValueError):
        paired_bootstrap_ci([], [], seed=0)
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1.0], [0.0], seed=0, resamples=0)


def test_paired_rate_by_hand() -> None:
    a = [True, True, False, False, True]
    b = [True, False, True, True, True]
    r = paired_rate(a, b, seed=0, resamples=100)
    assert (r.n, r.a, r.b, r.difference) == (5, 60.0, 80.0, pytest.approx(20.0))
    assert (r.only_a, r.only_b) == (1, 2)
    assert r.p_value == 1.0  # n = 3 discordant, min 1: 2 * (1 + 3) / 8 = 1
    assert r.ci95[0] <= r.difference <= r.ci95[1]


def _pairs(rows: list[tuple[str, tuple[str, ...], bool, bool, float, float]]) -> list[Pair]:
    out = []
    for item, types, ok_a, ok_b, min_a, min_b in rows:
        out.append(
            Pair(types, sample(Item(item, types, ok_a, min_a)), sample(Item(item, types, ok_b, min_b)))
        )
    return out


def test_groups_count_an_item_of_two_types_in_both_and_leave_empty_types_without_figures() -> None:
    pairs = _pairs(
        [
            ("0", ("background",), True, False, 1.0, -1.0),
            ("1", ("background", "shape"), False, True, -0.5, 0.5),
            ("2", ("shape",), True, True, 2.0, 3.0),
            ("3", ("shape",), False, True, 0.25, 0.25),
        ]
    )
    groups = {g.group: g for g in paired.compare_pairs(pairs, seed=0, resamples=50)}
    assert list(groups) == ["Overall", "BG", "TN", "CO", "RS", "Col.", "Ori.", "LS", "PA", "Sha."]
    overall, bg, sha = groups["Overall"], groups["BG"], groups["Sha."]
    assert overall.n == 4 and bg.n == 2 and sha.n == 3
    assert overall.accuracy is not None and bg.accuracy is not None and sha.accuracy is not None
    assert (overall.accuracy.a, overall.accuracy.b) == (50.0, 75.0)
    assert (bg.accuracy.only_a, bg.accuracy.only_b, bg.accuracy.difference) == (1, 1, 0.0)
    assert (sha.accuracy.only_a, sha.accuracy.only_b) == (0, 2)
    assert sha.accuracy.p_value == pytest.approx(0.5)  # b=0, c=2: 2 * 1/4
    assert sha.cgla_acc is not None and sha.cgla_min is not None
    # Sha.: CGLA_acc A = [0, 1, 1] -> 66.67, B = [1, 1, 1] -> 100; CGLA_min B - A = (1 + 1 + 0) / 3.
    assert sha.cgla_acc.a == pytest.approx(200 / 3) and sha.cgla_acc.b == 100.0
    assert sha.cgla_min.difference == pytest.approx(2 / 3)
    assert groups["TN"].n == 0 and groups["TN"].accuracy is None and groups["TN"].cgla_min is None


def test_a_run_without_cgla_gives_no_cgla_figures() -> None:
    pairs = [
        Pair(
            ("background",),
            sample(Item("0", ("background",), True)),
            sample(Item("0", ("background",), False)),
        )
    ]
    overall = paired.compare_pairs(pairs, resamples=10)[0]
    assert overall.accuracy is not None and overall.cgla_acc is None and overall.cgla_min is None


def test_unknown_type_and_no_pairs_are_refused() -> None:
    with pytest.raises(ValueError):
        paired.compare_pairs([])
    bad = Pair(("weather",), sample(Item("0", ("weather",), True)), sample(Item("0", ("weather",), True)))
    with pytest.raises(ValueError, match="weather"):
        paired.compare_pairs([bad])


def test_group_json_has_lists_for_intervals(tmp_path: Path) -> None:
    pairs = _pairs([("0", ("background",), True, False, 1.0, -1.0)])
    doc = paired.group_to_json(paired.compare_pairs(pairs, resamples=10)[0])
    assert doc["accuracy"]["ci95"] == [-100.0, -100.0] and doc["accuracy"]["only_a"] == 1
