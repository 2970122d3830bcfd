"""The ``synth`` subcommand (registered from ``mmspubench.dataset_builder.cli``)."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.defaults import CUES, DEFAULT_IMAGE_SIZE, DEFAULT_N, DEFAULT_SEED, MODES
from mmspubench.options import add_fields, did_you_mean, option

EPILOG = """examples:
  mmspubench synth --out raw                                   # 90-item benchmark-style release
  mmspubench synth --out train --n 5000 --mode train --correlation 0.95 --image-size 64
  mmspubench synth --out broken --n 500 --mode train --cue broken --seed 7
  mmspubench synth --out bg-only --n 4000 --mode train --correlation 0.95 --correlated-types background
  mmspubench synth --out letter-a --n 4000 --mode train --cue random --letter-bias A:0.9
  mmspubench synth --out cf --counterfactuals                 # each item also re-rendered with its cues changed
  mmspubench synth --out prior --n 4000 --mode train --cue random --text-prior-types background,colorization
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
        hint = did_you_mean(bad[0], [*TYPE_NAMES, *ABBREV_TYPE]) if bad else ""
        raise argparse.ArgumentTypeError(
            f"expected comma-separated spurious types (names or abbreviations: {', '.join(TYPE_NAMES)}), "
            f"got {text!r}{hint}"
        )
    chosen = {by_key[name.lower()] for name in names}
    return tuple(name for name in TYPE_NAMES if name in chosen)


def parse_type_list(text: str, flag: str = "--text-prior-types") -> tuple[str, ...]:
    """A list of types (``flag``'s value, e.g. ``--text-prior-types``) as type names; a bad value
    is one error line naming ``flag`` (exit 2)."""
    from mmspubench.errors import MMSpuBenchError

    try:
        return _types(text)
    except argparse.ArgumentTypeError as err:
        raise MMSpuBenchError(f"synth: {flag}: {err}") from None


@dataclass(frozen=True, slots=True)
class SynthOptions:
    """``mmspubench synth``'s options (light constants only: the generator loads in the handler)."""

    out: Path = option(MISSING, "folder to create (the raw release)", arg_type=Path)
    """Folder to create (the raw release)."""
    n: int = option(DEFAULT_N, "number of items", arg_type=int)
    """Number of items."""
    seed: int = option(DEFAULT_SEED, "random seed", arg_type=int)
    """Random seed of the scenes."""
    image_size: int = option(DEFAULT_IMAGE_SIZE, "side of the square images in pixels", arg_type=int)
    """Side of the square images in pixels."""
    mode: str = option(
        "benchmark",
        "benchmark: balanced types, cue broken by default; train: independent draws, "
        "class-cue correlation 0.9 by default",
        choices=MODES,
    )
    """``benchmark`` (balanced types) or ``train`` (independent draws)."""
    correlation: float | None = option(
        None,
        "probability that the planted values are the true class's home values",
        arg_type=_probability,
        metavar="P",
        exclusive="policy",
    )
    """Probability that the planted values are the true class's home values."""
    cue: str | None = option(
        None,
        "aligned: always the true class's home values; broken: always a misleading "
        "class's; random: uniform, uncorrelated with the class",
        choices=CUES,
        exclusive="policy",
    )
    """How the planted values relate to the class (instead of ``correlation``)."""
    correlated_types: tuple[str, ...] | None = option(
        None,
        "train mode: plant the correlated cue only on these types (e.g. background or BG); "
        "the other types' values are drawn uniformly",
        arg_type=_types,
        metavar="TYPE,...",
    )
    """Types that carry the correlated cue (train mode); ``None``: all."""
    letter_bias: str | None = option(
        None,
        "plant a letter bias: the gold answer at LETTER with probability SHARE, else at another "
        "letter uniformly (e.g. A:0.9); default: letters balanced",
        metavar="LETTER:SHARE",
    )
    """``LETTER:SHARE`` text of the letter bias (parsed in the handler: a bad value is one line)."""
    text_prior_types: str | None = option(
        None,
        "plant a text prior: items of these types name their class in the question "
        "(e.g. background,colorization or BG,Col.); default: no question names it",
        metavar="TYPE,...",
    )
    """Types whose questions name the class, as text (parsed in the handler)."""
    counterfactuals: bool = option(
        False,
        "also write each item's scene re-rendered with its planted cues aligned with the class, "
        "random and removed (data/images/counterfactuals/)",
    )
    """Write the exact counterfactuals of every item (``synth.counterfactuals``)."""
    overwrite: bool = option(False, "replace --out if it exists")
    """Replace ``out`` if it exists."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the ``synth`` subcommand to the ``mmspubench`` parser."""
    parser = sub.add_parser(
        "synth",
        help="write a synthetic raw release (annotation.json + data/images/)",
        description="Draw a synthetic twin of MM-SpuBench: object classes with planted, visible "
        "spurious attributes of all nine types, and questions that describe the object only by "
        "those attributes and its position.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_fields(parser, SynthOptions)
    parser.set_defaults(func=run_synth)


def run_synth(args: argparse.Namespace) -> int:
    """Handler of ``mmspubench synth``."""
    from collections import Counter

    from mmspubench.dataset_builder.schema import TYPE_ABBREV, TYPE_NAMES
    from mmspubench.dataset_builder.synth.confounds import parse_letter_bias
    from mmspubench.dataset_builder.synth.counterfactuals import text_names_cue
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    letter_bias = None if args.letter_bias is None else parse_letter_bias(args.letter_bias)
    prior_types = None if args.text_prior_types is None else parse_type_list(args.text_prior_types)
    counts: Counter[str] = Counter()
    named = 0

    def counted() -> Any:
        nonlocal named
        for item in generate_items(
            args.n,
            seed=args.seed,
            image_size=args.image_size,
            mode=args.mode,
            correlation=args.correlation,
            cue=args.cue,
            correlated_types=args.correlated_types,
            letter_bias=letter_bias,
            text_prior_types=prior_types,
        ):
            counts.update(item.spurious_types)
            named += text_names_cue(item)
            yield item

    out = write_release(args.out, counted(), overwrite=args.overwrite, counterfactuals=args.counterfactuals)
    per_type = ", ".join(f"{TYPE_ABBREV[name]} {counts[name]}" for name in TYPE_NAMES)
    extra = " with counterfactuals (cue-aligned, cue-random, cue-removed)" if args.counterfactuals else ""
    print(f"wrote {args.n} synthetic items{extra} to {out} ({per_type})")
    if args.counterfactuals:
        print(
            f"the question names the planted cue in {named} of {args.n} items: their counterfactual "
            "images change the cue, their text keeps naming the published one"
        )
    return 0
