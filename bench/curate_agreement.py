"""``curate export``'s agreement statistic at the benchmark's size: the coincidence form against the
plain pairwise computation it replaced, in one run.

    python bench/curate_agreement.py [--items 2400] [--annotators 5] [--pairwise-items 400]

Random 1-5 ratings. Prints seconds per metric for the coincidence form (mmspubench.curate.agreement)
on all items, and for both forms on ``--pairwise-items`` items (the pairwise form holds an n x n
matrix of the n ratings: 1.2 GB and minutes at 2,400 x 5), with the largest difference of alpha.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmspubench.curate.agreement import krippendorff_alpha

from tests.curate.alpha_reference import pairwise_alpha


def timed(
    fn: Callable[[Sequence[Sequence[float]], str], float | None], units: list[list[int]], metric: str
) -> tuple[float | None, float]:
    """(alpha, seconds) of one call."""
    start = time.perf_counter()
    alpha = fn(units, metric)
    return alpha, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2400)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--pairwise-items", type=int, default=400)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    units = rng.integers(1, 6, size=(args.items, args.annotators)).tolist()
    small = units[: args.pairwise_items]
    print(
        f"| metric | coincidence, {args.items} x {args.annotators} | coincidence, {len(small)} x {args.annotators} | pairwise, {len(small)} x {args.annotators} | speed-up | max abs alpha diff |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for metric in ("interval", "ordinal"):
        _, full_s = timed(krippendorff_alpha, units, metric)
        fast, fast_s = timed(krippendorff_alpha, small, metric)
        plain, plain_s = timed(pairwise_alpha, small, metric)
        diff = abs((fast or 0.0) - (plain or 0.0))
        print(
            f"| {metric} | {full_s * 1e3:.1f} ms | {fast_s * 1e3:.1f} ms | {plain_s * 1e3:.0f} ms | {plain_s / fast_s:.0f}x | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()
