"""A run's config as the ``mmspubench eval`` command line that makes it, and back.

The line is built from the fields' own declarations (``options.option()``: flags, boolean
switches, comma lists), and eval's own parser reads it back: a sweep checks the round trip
before anything runs, so the command it launches is the run it planned.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from mmspubench.eval.config import RunConfig, add_arguments, from_args
from mmspubench.options import cli_default, flag

LAST = ("out",)
"""Fields written last, so a reader of the command sees the run folder at its end."""


def _field_args(obj: Any) -> list[str]:
    args: list[str] = []
    fields = [f for f in dataclasses.fields(obj) if f.metadata.get("cli")]
    for f in sorted(fields, key=lambda f: f.name in LAST):
        value, default = getattr(obj, f.name), cli_default(f)
        if value == default or value is None:
            continue
        if isinstance(default, bool):
            args.append(f"--no-{f.name.replace('_', '-')}" if default else flag(f.name))
        elif isinstance(value, tuple):
            args += [flag(f.name), ",".join(str(v) for v in value)]
        else:
            args += [flag(f.name), str(value)]
    return args


def eval_argv(config: RunConfig) -> tuple[str, ...]:
    """The ``mmspubench eval`` arguments (after ``eval``) giving ``config``; defaults are left out."""
    engine = [] if config.backend_options is None else _field_args(config.backend_options)
    common = _field_args(config)
    return tuple(common[:-2] + engine + common[-2:]) if config.out is not None else tuple(common + engine)


def parsed_config(argv: tuple[str, ...]) -> RunConfig:
    """The config eval's own parser makes of ``argv`` (what the launched command will run)."""
    parser = argparse.ArgumentParser(prog="mmspubench eval", add_help=False, exit_on_error=False)
    add_arguments(parser)
    try:
        args = parser.parse_args(list(argv))
    except (argparse.ArgumentError, SystemExit) as err:
        from mmspubench.errors import MMSpuBenchError

        raise MMSpuBenchError(f"its eval command line does not parse ({err})") from None
    return from_args(args)
