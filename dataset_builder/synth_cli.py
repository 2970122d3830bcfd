"""The ``synth`` subcommand (registered from ``mmspubench.dataset_builder.cli``)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: "argparse._SubParsersAction[Any]") -> None:
    """Add the ``synth`` subcommand to the ``mmspubench`` parser."""
