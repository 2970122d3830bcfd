"""The minimum detectable difference of each type of the published benchmark (the paper's Table 1
sizes): the table of docs/metrics/intervals.md, in percentage points at 80% power and two-sided
alpha 0.05, unpaired at two accuracies and paired at three shares of discordant items.

    python bench/mdd_table.py
"""

from __future__ import annotations

from mmspubench.eval.analysis.stats.power import mdd_table


def main() -> int:
    """Print the table."""
    print(mdd_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
