"""Subcommands of this part (registered by ``mmspubench.eval.cli``)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: "argparse._SubParsersAction[Any]") -> None:
    """Add this part's subcommands to the ``mmspubench`` parser."""
