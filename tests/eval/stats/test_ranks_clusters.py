"""Rank intervals (against a plain loop with scipy's ranks, and the cases worked out by hand), tied
groups, and the clustered bootstrap (wider than the item bootstrap on clustered items, equal on
independent ones)."""

from __future__ import annotations

import numpy as np
import pytest
from mmspubench.eval.analysis.stats import (
    RankInterval,
    bootstrap_p_value,
    clustered_ci,
    rank_intervals,
    rank_intervals_by_group,
    resampled_means,
    tied_groups,
    tied_text,
)
from mmspubench.eval.metrics import bootstrap_ci
from scipy.stats import rankdata


def _runs(n: int = 120, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((5, n)) < np.array([[0.8], [0.62], [0.6], [0.58], [0.3]])).astype(float)


def test_rank_intervals_equal_a_plain_loop_over_the_same_draws() -> None:
    data, resamples = _runs(), 300
    got = rank_intervals(list("ABCDE"), data, seed=5, resamples=resamples)
    draws = np.random.default_rng(5).integers(0, data.shape[1], size=(resamples, data.shape[1]))
    best, worst = [], []
    for idx in draws:
        means = data[:, idx].mean(axis=1)
        best.append(rankdata(-means, method="min"))
        worst.append(rankdata(-means, method="max"))
    low = np.quantile(np.array(best), 0.025, axis=0, method="lower")
    high = np.quantile(np.array(worst), 0.975, axis=0, method="higher")
    observed = rankdata(-data.mean(axis=1), method="min")
    assert [(r.rank, r.low, r.high) for r in got] == list(zip(observed, low, high, strict=True))
    assert got[0].rate == pytest.approx(100.0 * data[0].mean())


def test_identical_runs_span_their_group() -> None:
    rng = np.random.default_rng(0)
    middle = (rng.random(200) < 0.5).astype(float)
    data = np.stack([np.ones(200), middle, middle, np.zeros(200)])
    got = rank_intervals(["best", "a", "a-again", "worst"], data, seed=0)
    assert [(r.rank, r.low, r.high) for r in got] == [(1, 1, 1), (2, 2, 3), (2, 2, 3), (4, 4, 4)]
    assert tied_groups(got) == (("best",), ("a", "a-again"), ("worst",))
    assert tied_text(got) == "a = a-again"


def test_a_run_better_on_every_item_ranks_first_with_zero_width() -> None:
    # real-valued outcomes (a mean such as CGLA_min): the best run is above each other on every item
    others = np.random.default_rng(1).random((3, 90))
    data = np.vstack([others.max(axis=0) + 0.01, others])
    got = rank_intervals(["best", "x", "y", "z"], data, seed=2)
    assert (got[0].rank, got[0].low, got[0].high) == (1, 1, 1)
    assert all(r.low >= 2 for r in got[1:])
    # right answers: right wherever the others are wrong
    right = np.vstack([np.ones(60), np.zeros((2, 60))])
    assert rank_intervals(["best", "x", "y"], right, seed=0)[0].label() == "1 [1, 1]"


def test_tied_groups_merge_chains_of_overlaps() -> None:
    intervals = [
        RankInterval("a", 90.0, 1, 1, 2),
        RankInterval("b", 80.0, 2, 1, 3),
        RankInterval("c", 70.0, 3, 3, 4),
        RankInterval("d", 60.0, 4, 5, 5),
    ]
    assert tied_groups(intervals) == (("a", "b", "c"), ("d",))
    assert intervals[1].label() == "2 [1, 3]"
    assert tied_text(intervals[3:]) == "no ties"


def test_rank_intervals_refuse_bad_shapes() -> None:
    with pytest.raises(ValueError, match="at least two runs"):
        rank_intervals(["a"], [[1.0, 0.0]], seed=0)
    with pytest.raises(ValueError, match="one row per run"):
        rank_intervals(["a", "b", "c"], [[1.0], [0.0]], seed=0)


def test_clustered_interval_equals_the_item_interval_on_independent_items() -> None:
    values = list((np.random.default_rng(4).random(103) < 0.6).astype(bool))
    assert clustered_ci(values, list(range(103)), seed=9) == bootstrap_ci(values, seed=9)


def test_clustered_interval_is_wider_on_clustered_items() -> None:
    # 30 source images, each asked four times (e.g. four rotations) with the same outcome
    rng = np.random.default_rng(5)
    source = rng.random(30) < 0.5
    values = list(np.repeat(source, 4))
    clusters = list(np.repeat(np.arange(30), 4))
    naive = bootstrap_ci(values, seed=0)
    clustered = clustered_ci(values, clusters, seed=0)
    width = clustered[1] - clustered[0]
    assert width > 1.6 * (naive[1] - naive[0])  # about twice: four copies carry one item's information
    assert width == pytest.approx(np.diff(bootstrap_ci(list(source), seed=0))[0], rel=0.25)


def test_clustered_means_equal_a_plain_loop() -> None:
    data = np.array([[1, 0, 1, 1, 0], [0, 0, 1, 0, 1]], dtype=float)
    clusters = ["s1", "s1", "s2", "s3", "s3"]
    got = resampled_means(data, seed=3, resamples=50, clusters=clusters)
    members = [[0, 1], [2], [3, 4]]
    draws = np.random.default_rng(3).integers(0, 3, size=(50, 3))
    for row, idx in zip(got, draws, strict=True):
        items = [i for c in idx for i in members[c]]
        assert row == pytest.approx(data[:, items].mean(axis=1))
    with pytest.raises(ValueError, match="label every item"):
        resampled_means(data, seed=0, clusters=["s1"])


def test_rank_intervals_per_type_resample_the_type_items() -> None:
    data = _runs(n=40)
    types = [("background",)] * 30 + [("background", "relative_size")] * 10
    got = rank_intervals_by_group(list("ABCDE"), data, types, seed=1, resamples=200)
    assert got["Overall"] == rank_intervals(list("ABCDE"), data, seed=1, resamples=200)
    assert got["RS"] == rank_intervals(list("ABCDE"), data[:, 30:], seed=1, resamples=200)
    assert got["BG"] == got["Overall"] and got["TN"] is None


def test_bootstrap_p_value_counts_the_draws_of_the_interval() -> None:
    a = np.zeros(40)
    b = (np.arange(40) % 3 == 0).astype(float)
    draws = np.random.default_rng(2).integers(0, 40, size=(200, 40))
    means = (b - a)[draws].mean(axis=1)
    tail = min(int((means <= 0).sum()), int((means >= 0).sum()))
    assert bootstrap_p_value(a, b, seed=2, resamples=200) == 2 * (tail + 1) / 201
    assert bootstrap_p_value(a, a, seed=2, resamples=200) == 1.0
