"""``mmspubench sweep SWEEP.yaml``: the options declared once, the handler a thin layer."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.options import add_fields, option, values_of

MAX_PARALLEL = 1024
"""Local runs at once: each is a process with a model loaded; more is a typo, not a plan."""
MAX_RETRIES = 100
"""Retries of a failed run within one call."""


def _gpus(text: str) -> tuple[str, ...]:
    ids = tuple(part.strip() for part in text.split(",") if part.strip())
    if not text.strip():
        return ()
    if not ids or not all(i.isdigit() for i in ids) or len(set(ids)) != len(ids):
        raise MMSpuBenchError(f"--gpus {text!r}: expected distinct GPU numbers separated by commas, e.g. 0,1")
    return ids


def _launchers() -> tuple[str, ...]:
    from mmspubench.sweep.launchers import registry

    return registry.names()


@dataclass(frozen=True, slots=True)
class SweepOptions:
    """The options of ``mmspubench sweep``."""

    sweep: str = option(None, "the SWEEP.yaml file", positional=True, metavar="SWEEP.yaml")
    """The sweep file."""
    launcher: str = option("local", "where the runs run: local, slurm, hf-jobs", choices=_launchers)
    """The launcher (``sweep/launchers/registry.py``)."""
    dry_run: bool = option(
        False, "print the plan (run folder, model, options, state) and each run's eval command; run nothing"
    )
    """Plan only."""
    max_parallel: int | None = option(
        None,
        "local runs at once (default: 1; with --gpus one per GPU)",
        arg_type=int,
        minimum=1,
        maximum=MAX_PARALLEL,
        expect=f"an integer from 1 to {MAX_PARALLEL}",
    )
    """Local runs at once."""
    retries: int = option(
        1,
        "attempts after the first for a failed run (default: 1)",
        arg_type=int,
        minimum=0,
        maximum=MAX_RETRIES,
        expect=f"an integer from 0 to {MAX_RETRIES}",
    )
    """Retries of a failed run within one sweep call."""
    gpus: tuple[str, ...] = option(
        (), "local GPUs, one run each, e.g. 0,1,2,3", parse=_gpus, default_factory=tuple
    )
    """GPU ids for the local launcher."""
    no_wait: bool = option(False, "submit the jobs and return (slurm, hf-jobs); a second sweep collects them")
    """Do not wait for submitted jobs."""
    plot: bool = option(False, "also draw root/report.png and a plot per comparison")
    """Plots beside the Markdown."""


EPILOG = """examples:
  mmspubench sweep sweep.yaml --dry-run                  # the plan and the state of every run
  mmspubench sweep sweep.yaml --max-parallel 2           # two local runs at once
  mmspubench sweep sweep.yaml --gpus 0,1,2,3             # one run per GPU
  mmspubench sweep sweep.yaml --launcher slurm --no-wait # submit a job array; rerun to collect
  mmspubench sweep sweep.yaml --launcher hf-jobs         # Hugging Face Jobs (HF_TOKEN as a secret)
"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``sweep`` to the ``mmspubench`` parser."""
    p = sub.add_parser(
        "sweep",
        help="many models x prompt variants: one eval run folder each, resumable, with report and compare",
        description="Expand SWEEP.yaml into one `mmspubench eval` run folder per (model, variant) under "
        "its root, run them (locally, on Slurm or on Hugging Face Jobs), retry failures, skip finished "
        "runs, resume partial ones, then write report.md and the comparisons against `standard`.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_fields(p, SweepOptions)
    p.set_defaults(func=run_sweep_command)


def _check_ranges(values: SweepOptions) -> None:
    """``--retries -1``, ``--max-parallel 0``: refused (argparse reads any integer)."""
    from mmspubench.eval.config_checks import check_field

    hints = typing.get_type_hints(SweepOptions)
    for f in dataclasses.fields(SweepOptions):
        if f.metadata.get("minimum") is not None or f.metadata.get("maximum") is not None:
            check_field(f, hints[f.name], getattr(values, f.name))


def run_sweep_command(args: argparse.Namespace) -> int:
    """``mmspubench sweep``."""
    from mmspubench.sweep.engine import SweepRequest, run_sweep
    from mmspubench.sweep.launchers.plugin import LaunchOptions

    values = SweepOptions(**values_of(SweepOptions, args))
    _check_ranges(values)
    launch = LaunchOptions(values.max_parallel, values.gpus, values.no_wait)
    request = SweepRequest(values.sweep, values.launcher, values.dry_run, values.retries, values.plot, launch)
    return run_sweep(request)
