"""The ``synth`` subcommand (registered from ``mmspubench.dataset_builder.cli``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EPILOG = """examples:
  mmspubench synth --out raw                                   # 90-item benchmark-style release
  mmspubench synth --out train --n 5000 --mode train --correlation 0.95 --image-size 64
  mmspubench synth --out broken --n 500 --mode train --cue broken --seed 7
  mmspubench synth --out bg-only --n 4000 --mode train --correlation 0.95 --correlated-types background
"""


def _probability(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return number


def _types(text: str) -> tuple[str, ...]:
    from mmspubench.dataset_builder.schema import ABBREV_TYPE, TYPE_NAMES

    by_key = {**{name.lower(): name for name in TYPE_NAMES}, **{a.lower(): n for a, n in ABBREV_TYPE.items()}}
    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [name for name in names if name.lower() not in by_key]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated spurious types (names or abbreviations: {', '.join(TYPE_NAMES)}), got {text!r}"
        )
    chosen = {by_key[name.lower()] for name in names}
    return tuple(name for name in TYPE_NAMES if name in chosen)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the ``synth`` subcommand to the ``mmspubench`` parser."""
    # Light constants only: the generator itself (numpy, PIL, datasets) loads in the handler.
    from mmspubench.dataset_builder.defaults import (
        CUES,
        DEFAULT_IMAGE_SIZE,
        DEFAULT_N,
        DEFAULT_SEED,
        MODES,
    )

    parser = sub.add_parser(
        "synth",
        help="write a synthetic raw release (annotation.json + data/images/)",
        description="Draw a synthetic twin of MM-SpuBench: object classes with planted, visible "
        "spurious attributes of all nine types, and questions that describe the object only by "
        "those attributes and its position.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, type=Path, help="folder to create (the raw release)")
    parser.add_argument("--n", type=int, default=DEFAULT_N, help=f"number of items (default {DEFAULT_N})")
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--image-size",
        type=int,
        default=DEFAULT_IMAGE_SIZE,
        help=f"side of the square images in pixels (default {DEFAULT_IMAGE_SIZE})",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="benchmark",
        help="benchmark: balanced types, cue broken by default; train: independent draws, "
        "class-cue correlation 0.9 by default",
    )
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument(
        "--correlation",
        type=_probability,
        default=None,
        metavar="P",
        help="probability that the planted values are the true class's home values",
    )
    policy.add_argument(
        "--cue",
        choices=CUES,
        default=None,
        help="aligned: always the true class's home values; broken: always a misleading "
        "class's; random: uniform, uncorrelated with the class",
    )
    parser.add_argument(
        "--correlated-types",
        type=_types,
        default=None,
        metavar="TYPE,...",
        help="train mode: plant the correlated cue only on these types (e.g. background or BG); "
        "the other types' values are drawn uniformly",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    parser.set_defaults(func=run_synth)


def run_synth(args: argparse.Namespace) -> int:
    """Handler of ``mmspubench synth``."""
    from collections import Counter

    from mmspubench.dataset_builder.schema import TYPE_ABBREV, TYPE_NAMES
    from mmspubench.dataset_builder.synth import generate_items, write_release

    counts: Counter[str] = Counter()

    def counted() -> Any:
        for item in generate_items(
            args.n,
            seed=args.seed,
            image_size=args.image_size,
            mode=args.mode,
            correlation=args.correlation,
            cue=args.cue,
            correlated_types=args.correlated_types,
        ):
            counts.update(item.spurious_types)
            yield item

    out = write_release(args.out, counted(), overwrite=args.overwrite)
    per_type = ", ".join(f"{TYPE_ABBREV[name]} {counts[name]}" for name in TYPE_NAMES)
    print(f"wrote {args.n} synthetic items to {out} ({per_type})")
    return 0
