"""Holm and Benjamini-Hochberg against statsmodels' ``multipletests``; the minimum detectable
difference against statsmodels' normal power solver and a simulated power."""

from __future__ import annotations

import numpy as np
import pytest
from mmspubench.eval.analysis.stats import adjust, adjust_present, mdd_paired, mdd_unpaired, z_sum
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

FAMILIES = [
    [0.01, 0.04, 0.03, 0.2, 0.5, 0.0001, 0.049, 0.8, 1.0, 0.02],  # a compare table: overall + nine types
    [0.05, 0.05, 0.05],  # ties
    [1.0],
    [0.0, 0.0, 0.3],
    list(np.random.default_rng(7).random(45)),  # every pair of ten runs
]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("ours", "theirs"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_values_equal_statsmodels(family: list[float], ours: str, theirs: str) -> None:
    expected = multipletests(family, alpha=0.05, method=theirs)[1]
    assert adjust(family, ours) == pytest.approx(list(expected), abs=1e-12)


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04 (made non-decreasing)
    assert adjust([0.04, 0.01, 0.02], "holm") == pytest.approx([0.04, 0.03, 0.04])


def test_a_missing_test_is_not_in_the_family() -> None:
    assert adjust_present([0.01, None, 0.04], "holm") == pytest.approx([0.02, None, 0.04])


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="adjustment must be one of holm, bh"):
        adjust([0.1], "bonferroni")
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        adjust([1.5])
    assert adjust([]) == []


def test_z_sum_is_the_stated_constant() -> None:
    assert z_sum() == pytest.approx(1.959964 + 0.841621, abs=1e-6)


POWER_AT_MDD_TOLERANCE = 1e-5
"""statsmodels' power also counts rejections in the wrong tail (Phi(-z - 1.96), under 1e-5 at these
sizes); the closed form leaves that tail out."""


@pytest.mark.parametrize(("n", "psi"), [(75, 0.3), (100, 0.2), (1908, 0.25), (2400, 0.5)])
def test_paired_mdd_has_80_percent_power_by_statsmodels(n: int, psi: float) -> None:
    delta = mdd_paired(n, psi)
    assert delta is not None
    # a one-sample z test of the mean difference, standard deviation sqrt(psi): ratio=0
    effect = delta / 100.0 / psi**0.5
    power = NormalIndPower().power(effect_size=effect, nobs1=n, alpha=0.05, ratio=0)
    assert power == pytest.approx(0.8, abs=POWER_AT_MDD_TOLERANCE)


@pytest.mark.parametrize(("n", "rate"), [(75, 50.0), (103, 30.0), (1908, 80.0)])
def test_unpaired_mdd_has_80_percent_power_by_statsmodels(n: int, rate: float) -> None:
    delta = mdd_unpaired(n, rate)
    assert delta is not None
    p = rate / 100.0
    effect = delta / 100.0 / (p * (1 - p)) ** 0.5
    power = NormalIndPower().power(effect_size=effect, nobs1=n, alpha=0.05, ratio=1)
    assert power == pytest.approx(0.8, abs=POWER_AT_MDD_TOLERANCE)


SIMULATIONS = 4000
POWER_TOLERANCE = 0.03
"""About five standard errors of a simulated power over 4000 data sets (sd 0.0063 at 0.8)."""


def test_paired_mdd_has_80_percent_power_in_simulation() -> None:
    n, psi = 1908, 0.3
    delta = mdd_paired(n, psi)
    assert delta is not None
    d = delta / 100.0
    rng = np.random.default_rng(0)
    counts = rng.multinomial(n, [(psi + d) / 2, (psi - d) / 2, 1 - psi], size=SIMULATIONS)
    only_b, only_a = counts[:, 0], counts[:, 1]
    z = (only_b - only_a) / np.sqrt(only_b + only_a)  # McNemar's z
    power = float(np.mean(np.abs(z) > 1.959964))
    assert abs(power - 0.8) < POWER_TOLERANCE, power


def test_unpaired_mdd_has_80_percent_power_in_simulation() -> None:
    n, p = 1908, 0.6
    delta = mdd_unpaired(n, 100.0 * p)
    assert delta is not None
    d = delta / 100.0
    rng = np.random.default_rng(1)
    a = rng.binomial(n, p - d / 2, size=SIMULATIONS) / n
    b = rng.binomial(n, p + d / 2, size=SIMULATIONS) / n
    pooled = (a + b) / 2
    z = (b - a) / np.sqrt(2 * pooled * (1 - pooled) / n)
    power = float(np.mean(np.abs(z) > 1.959964))
    assert abs(power - 0.8) < POWER_TOLERANCE, power


def test_no_variance_gives_no_estimate_never_zero() -> None:
    assert mdd_paired(100, 0.0) is None
    assert mdd_unpaired(100, 100.0) is None
    with pytest.raises(ValueError, match="at least one item"):
        mdd_paired(0, 0.2)
    with pytest.raises(ValueError, match=r"\[0, 100\] percent"):
        mdd_unpaired(10, 0.5 * 300)


def test_the_published_sizes_are_table_1() -> None:
    from mmspubench.eval.analysis.stats.power import PUBLISHED_SIZES

    shares = {"BG": 79.50, "TN": 12.00, "CO": 37.62, "RS": 3.12, "Col.": 10.33, "Ori.": 31.83, "LS": 4.29}
    shares.update({"PA": 4.17, "Sha.": 16.71})  # the paper's percentages of the 2,400 items
    for group, share in shares.items():
        assert round(100 * PUBLISHED_SIZES[group] / PUBLISHED_SIZES["Overall"], 2) == share, group


def test_the_bench_script_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy
    from pathlib import Path

    from mmspubench.eval.analysis.stats.power import mdd_table

    script = Path(__file__).resolve().parents[3] / "bench" / "mdd_table.py"
    assert runpy.run_path(str(script))["main"]() == 0
    printed = capsys.readouterr().out
    assert printed == mdd_table() + "\n"
    rs = next(line for line in printed.splitlines() if line.startswith("| RS | 75 |"))
    expected = [mdd_unpaired(75, 50.0), mdd_unpaired(75, 75.0), *(mdd_paired(75, s) for s in (0.1, 0.2, 0.3))]
    assert rs == "| RS | 75 | " + " | ".join(f"{v:.1f}" for v in expected if v is not None) + " |"
