"""Write a folder in full beside its destination, then swap it into place.

An interrupted or failed write never leaves a partial folder at the destination, and an existing
one survives until its replacement is complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def swap_into(new: Path, out: Path, work: Path) -> None:
    """Move the finished folder ``new`` to ``out``; an existing ``out`` is moved into ``work`` first
    (and restored if the move fails), so the caller's clean-up of ``work`` deletes it."""
    if out.exists() or out.is_symlink():
        old = work / "replaced"
        os.replace(out, old)
        try:
            os.replace(new, out)
        except OSError:
            os.replace(old, out)
            raise
    else:
        os.replace(new, out)


def replace_folder(out: Path, fill: Callable[[Path], T]) -> T:
    """Call ``fill(path)`` to create a folder at a temporary sibling ``path``, then swap it into
    ``out``; returns what ``fill`` returned. Nothing is left beside ``out`` afterwards."""
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        result = fill(work / "new")
        swap_into(work / "new", out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result
