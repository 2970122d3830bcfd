"""What the fast path's check costs: the same run with ``--scorer-check K`` and with ``--scorer-check 0``.

Both runs are the main job's (``accuracy,cgla``, generate mode, the bundled synthetic release's 90
items, ``--scorer fast``) on the LLaVA-1.5 token profile on the CPU (576 image tokens, a
42M-parameter language model, ``bench/llava_profile.py``: built offline, saved, loaded back like a
user's model). Printed: each run's total and CGLA time, the check's own time
(``timing.scorer_check_seconds``: the plain scorer on the K items' requests) and its share of the
checked run, and the ratio of the two totals (which also holds the checked items' scoring one at a
time instead of in a batch). Ratios from one run, as every benchmark here (these machines are
noisy; the check's share is measured inside one run and is the steadier figure).

Examples:
  python bench/scorer_check_cost.py                      # K = 1 (eval's default), 90 items, ~5 min on 2 cores
  python bench/scorer_check_cost.py --check 4 --limit 30
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llava_profile


def run(model: Path, out: Path, check: int, limit: int | None, batch_size: int) -> dict[str, Any]:
    """One run through the public API; its results.json object."""
    import mmspubench

    results = mmspubench.evaluate(
        model=str(model),
        out=str(out),
        scorer="fast",
        scorer_check=check,
        limit=limit,
        batch_size=batch_size,
        progress=False,
    )
    assert results is not None
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", type=int, default=1, help="items checked in the checked run (default 1, eval's)"
    )
    parser.add_argument("--limit", type=int, default=None, help="items of the run (default: all 90)")
    parser.add_argument("--batch-size", type=int, default=8, help="items per chunk (default 8, eval's)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = llava_profile.save_llava(work / "realistic-llava", llava_profile.CPU_REALISTIC)
        unchecked = run(model, work / "unchecked", 0, args.limit, args.batch_size)
        checked = run(model, work / "checked", args.check, args.limit, args.batch_size)
    check = checked["model"]["scorer_check"]
    timing, base = checked["timing"], unchecked["timing"]
    share = timing["scorer_check_seconds"] / timing["total_seconds"]
    print(f"## fast path check: 576 image tokens, {checked['dataset']['n']} items, batch {args.batch_size}")
    print()
    print("| run | total s | CGLA s | check s | items checked | scores compared | max abs diff |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, results in (("--scorer-check 0", unchecked), (f"--scorer-check {args.check}", checked)):
        t, c = results["timing"], results["model"]["scorer_check"]
        print(
            f"| {name} | {t['total_seconds']:.1f} | {t['cgla_seconds']:.1f} | {t['scorer_check_seconds']:.1f} "
            f"| {c['items']} | {c['conditions']} | {c['max_abs_diff'] if c['max_abs_diff'] is not None else '—'} |"
        )
    print()
    print(f"check's share of the checked run: {100 * share:.1f}%")
    print(f"checked / unchecked total: {timing['total_seconds'] / base['total_seconds']:.3f}")
    assert check["items"] == min(args.check, checked["dataset"]["n"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
