from __future__ import annotations

import math
from typing import Any

import pytest
from mmspubench.eval import metrics
from mmspubench.eval.metrics import Scored

# Hand-computed CGLA_min rows: core CGLs, spurious CGLs, reduction -> CGLA_min, CGLA_acc.
CGLA_CASES: list[dict[str, Any]] = [
    {"core": [-2.0, -1.0], "spu": [-1.5, -3.0], "red": "best", "min": 0.5, "acc": True},
    {"core": [-2.0, -1.0], "spu": [-1.5, -3.0], "red": "mean", "min": 0.0, "acc": False},  # tie: not robust
    {"core": [-2.0, -1.0], "spu": [-1.5, -3.0], "red": "first", "min": -0.5, "acc": False},
    {"core": [-4.0], "spu": [-5.0], "red": "best", "min": 1.0, "acc": True},
    {"core": [-4.0], "spu": [-5.0, -3.5, -6.0], "red": "best", "min": -0.5, "acc": False},
    {"core": [-1.0, -7.0, -4.0], "spu": [-2.0, -2.5], "red": "mean", "min": -2.0, "acc": False},
]


@pytest.mark.parametrize("case", CGLA_CASES)
def test_cgla_min_hand_computed(case: dict[str, Any]) -> None:
    value = metrics.cgla_min(case["core"], case["spu"], case["red"])
    assert value == pytest.approx(case["min"], abs=1e-12)
    assert metrics.cgla_acc(value) is case["acc"]


@pytest.mark.parametrize("case", CGLA_CASES)
def test_cgla_min_equals_min_over_pairwise_cgla(case: dict[str, Any]) -> None:
    core = metrics.reduce_core(case["core"], case["red"])
    plain = min(core - s for s in case["spu"])  # definition (5) of the paper
    assert metrics.cgla_min(case["core"], case["spu"], case["red"]) == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (metrics.percent, ([],)),
        (metrics.bootstrap_ci, ([], 0)),
        (metrics.cgla_min, ([], [-1.0], "best")),
        (metrics.cgla_min, ([-1.0], [], "best")),
        (metrics.reduce_core, ([-1.0], "median")),
        (metrics.accuracy_summary, ([], 0, 0)),
        (metrics.type_average, ({"BG": None, "TN": None},)),
        (metrics.cgla_summary, ([], "best", 0)),
    ],
)
def test_empty_or_bad_inputs_raise(call: Any, args: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError):
        call(*args)


ITEMS = [
    Scored(("background",), 1.0),
    Scored(("background", "texture_noise"), 0.0),
    Scored(("texture_noise",), 1.0),
    Scored(("co_occurring_objects",), 1.0),
]


def test_accuracy_summary_counts_two_type_items_in_both() -> None:
    summary = metrics.accuracy_summary(ITEMS, unparsed=1, seed=0)
    assert summary["overall"] == 75.0
    # Table 2's Average: mean of the types with items, (50 + 50 + 100) / 3, not the item share.
    assert summary["average"] == pytest.approx(200.0 / 3.0)
    assert summary["n"] == 4
    assert summary["unparsed"] == 1
    assert summary["by_type"]["BG"] == 50.0
    assert summary["by_type"]["TN"] == 50.0
    assert summary["by_type"]["CO"] == 100.0
    assert summary["by_type"]["Sha."] is None
    assert summary["n_by_type"] == {
        "BG": 2,
        "TN": 2,
        "CO": 1,
        "RS": 0,
        "Col.": 0,
        "Ori.": 0,
        "LS": 0,
        "PA": 0,
        "Sha.": 0,
    }
    assert list(summary["by_type"]) == ["BG", "TN", "CO", "RS", "Col.", "Ori.", "LS", "PA", "Sha."]
    assert summary["ci95"]["by_type"]["CO"] == [100.0, 100.0]
    assert summary["ci95"]["by_type"]["RS"] is None


def test_cgla_summary_hand_computed() -> None:
    items = [Scored(("background",), 0.5), Scored(("background", "shape"), -1.0), Scored(("shape",), 0.0)]
    summary = metrics.cgla_summary(items, "best", seed=0)
    assert summary["acc"] == pytest.approx(100.0 / 3.0)
    assert summary["by_type"]["BG"] == 50.0
    assert summary["by_type"]["Sha."] == 0.0  # -1.0 and a tie at 0.0
    assert summary["by_type"]["TN"] is None
    assert summary["mean_cgla_min"] == pytest.approx(-0.5 / 3.0)
    assert summary["mean_cgla_min_by_type"]["BG"] == pytest.approx(-0.25)
    assert summary["core_reduction"] == "best"
    assert summary["n"] == 3


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown spurious type"):
        metrics.group_by_type([Scored(("weather",), 1.0)])


def test_bootstrap_constant_and_two_point() -> None:
    assert metrics.bootstrap_ci([True] * 7, seed=3) == (100.0, 100.0)
    assert metrics.bootstrap_ci([False], seed=3) == (0.0, 0.0)
    # Two items: a resample mean is 0, 50 or 100 with probability 1/4, 1/2, 1/4, so the 2.5% and
    # 97.5% quantiles of 1000 resamples are 0 and 100.
    assert metrics.bootstrap_ci([True, False], seed=0) == (0.0, 100.0)


def test_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    values = [i % 3 != 0 for i in range(60)]
    low, high = metrics.bootstrap_ci(values, seed=11)
    assert (low, high) == metrics.bootstrap_ci(values, seed=11)
    assert low < metrics.percent(values) < high
    # Normal approximation: half-width about 1.96 * sqrt(p(1-p)/n) = 11.9 points.
    half = 1.96 * math.sqrt((2 / 3) * (1 / 3) / 60) * 100
    assert (high - low) / 2 == pytest.approx(half, rel=0.2)
