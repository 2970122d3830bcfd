"""The ``mmspubench`` command line: one dispatcher, each part registering its own subcommands.

The console script points here; ``python -m mmspubench.eval.cli`` (for ``accelerate launch``) and
``python -m mmspubench.cli`` reach the same ``main``.

Subcommand modules import nothing heavy at module level, so ``mmspubench build`` works on an
install without torch, and ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mmspubench import __version__
from mmspubench.curate import cli as curate_cli
from mmspubench.dataset_builder import cli as builder_cli
from mmspubench.eval import commands as eval_cli
from mmspubench.eval.extras import missing_extra_error
from mmspubench.eval.submit import cli as submit_cli
from mmspubench.guard import run_guarded
from mmspubench.integrations import cli as integrations_cli
from mmspubench.options import SuggestingParser
from mmspubench.space import cli as space_cli
from mmspubench.sweep import cli as sweep_cli

EPILOG = """examples:
  mmspubench synth --out raw                     # synthetic raw release
  mmspubench build --source raw --out repo       # raw release -> Hub-layout dataset folder
  mmspubench eval --out runs/default             # bundled model on the bundled synthetic release
  mmspubench report runs/*/results.json          # Table-2-style Markdown
  mmspubench push --repo-dir repo --repo-id org/MM-SpuBench --dry-run
  mmspubench submit runs/m/results.json --model-repo org/model --dry-run out   # a full run of mmbench/MM-SpuBench
  mmspubench space --port 7860
  mmspubench sweep sweep.yaml --max-parallel 2   # many models x prompt variants, resumable
  mmspubench curate select --data images/ --source-name ObjectNet --out cand   # then annotate, review, export
"""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every subcommand registered."""
    parser = SuggestingParser(
        prog="mmspubench",
        description="MM-SpuBench: build the dataset, evaluate vision-language models, run the Space.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    builder_cli.register(sub)
    eval_cli.register(sub)
    space_cli.register(sub)
    submit_cli.register(sub)
    curate_cli.register(sub)
    integrations_cli.register(sub)
    sweep_cli.register(sub)
    return parser


def naming_extras(func: Callable[[Any], int]) -> Callable[[Any], int]:
    """``func`` with a missing optional package (``ModuleNotFoundError``) reported as the extra to install."""

    def run(args: Any) -> int:
        try:
            return func(args)
        except ModuleNotFoundError as err:
            error = missing_extra_error("this command", err)
            if error is None:
                raise
            raise error from None

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    return run_guarded(args.command, naming_extras(args.func), args)


if __name__ == "__main__":
    sys.exit(main())
