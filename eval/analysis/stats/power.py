"""Minimum detectable difference (MDD): the smallest true difference a test of two rates would find
with the given power, at two-sided level alpha, by the normal approximation.

Closed forms (differences in percentage points; z_q the standard normal quantile):

- **paired** (two runs on the same n items, McNemar's setting), with psi = (b + c) / n the observed
  share of discordant items (right in one run only)::

      MDD = 100 * (z_{1 - alpha/2} + z_{power}) * sqrt(psi / n)

  the per-item difference d_i in {-1, 0, 1} has variance psi - delta^2 <= psi; psi is its value
  under "no difference", so the figure is slightly conservative.
- **unpaired** (two independent samples of n items each, both near the rate p)::

      MDD = 100 * (z_{1 - alpha/2} + z_{power}) * sqrt(2 p (1 - p) / n)

With alpha = 0.05 and power 0.8, z_{0.975} + z_{0.8} = 1.95996 + 0.84162 = 2.80158. With psi = 0, or
p at 0 or 1, the observed variance is zero and the formula would call any difference detectable: the
figure is ``None`` (no estimate), never 0. The tests check both forms against statsmodels' normal
power solver and a simulated power.
"""

from __future__ import annotations

from statistics import NormalDist

ALPHA = 0.05
"""Two-sided level of the test."""
POWER = 0.8
"""Probability of detecting a true difference of the MDD."""


def z_sum(alpha: float = ALPHA, power: float = POWER) -> float:
    """``z_{1 - alpha/2} + z_{power}``."""
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    normal = NormalDist()
    return normal.inv_cdf(1.0 - alpha / 2.0) + normal.inv_cdf(power)


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"a detectable difference needs at least one item, got n = {n}")


def mdd_paired(n: int, discordant: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """MDD (percentage points) of a paired comparison on ``n`` items with ``discordant`` the share
    (0-1) of items right in one run only; ``None`` when that share is 0."""
    _check_n(n)
    if not 0.0 <= discordant <= 1.0:
        raise ValueError(f"the discordant share must lie in [0, 1], got {discordant}")
    if discordant == 0.0:
        return None
    return 100.0 * z_sum(alpha, power) * (discordant / n) ** 0.5


def mdd_unpaired(n: int, rate: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """MDD (percentage points) of two independent samples of ``n`` items each at ``rate`` (percent);
    ``None`` when the rate is 0 or 100."""
    _check_n(n)
    if not 0.0 <= rate <= 100.0:
        raise ValueError(f"the rate must lie in [0, 100] percent, got {rate}")
    p = rate / 100.0
    if p in (0.0, 1.0):
        return None
    return 100.0 * z_sum(alpha, power) * (2.0 * p * (1.0 - p) / n) ** 0.5


PUBLISHED_SIZES: dict[str, int] = {
    "Overall": 2400,
    "BG": 1908,
    "TN": 288,
    "CO": 903,
    "RS": 75,
    "Col.": 248,
    "Ori.": 764,
    "LS": 103,
    "PA": 100,
    "Sha.": 401,
}
"""Items of the published benchmark, overall and per type (the paper's Table 1; an item with two
types counts in both)."""
TABLE_RATES: tuple[float, ...] = (50.0, 75.0)
"""Accuracies (percent) of the unpaired columns of :func:`mdd_table` (50: the widest)."""
TABLE_DISCORDANCES: tuple[float, ...] = (0.1, 0.2, 0.3)
"""Discordant shares of the paired columns of :func:`mdd_table`."""


def mdd_table(sizes: dict[str, int] | None = None) -> str:
    """The Markdown table of minimum detectable differences (points; 80% power, alpha 0.05) for
    ``sizes`` (default: :data:`PUBLISHED_SIZES`), unpaired at :data:`TABLE_RATES` and paired at
    :data:`TABLE_DISCORDANCES`."""
    chosen = PUBLISHED_SIZES if sizes is None else sizes
    head = ["Type", "n"]
    head += [f"unpaired, accuracy {rate:g}%" for rate in TABLE_RATES]
    head += [f"paired, {100 * share:g}% discordant" for share in TABLE_DISCORDANCES]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for group, n in chosen.items():
        cells = [mdd_unpaired(n, rate) for rate in TABLE_RATES]
        cells += [mdd_paired(n, share) for share in TABLE_DISCORDANCES]
        shown = ["—" if value is None else f"{value:.1f}" for value in cells]
        lines.append("| " + " | ".join([group, str(n), *shown]) + " |")
    return "\n".join(lines)
