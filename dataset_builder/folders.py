"""Write a folder in full beside its destination, then swap it into place.

An interrupted or failed write never leaves a partial folder at the destination, and an existing
one survives until its replacement is complete.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends, so the two renames of a swap are never split.

    A signal that arrives meanwhile is acted on (with the handler that was in place) right after.
    """
    pending: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    try:
        previous = {s: signal.signal(s, remember) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: signals are not ours to handle here
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for pending_signum in pending:
            old = previous[signal.Signals(pending_signum)]
            if callable(old):
                old(pending_signum, None)
            elif old == signal.SIG_DFL:
                signal.raise_signal(pending_signum)


def swap_into(new: Path, out: Path, work: Path) -> None:
    """Move the finished folder ``new`` to ``out``; an existing ``out`` is moved into ``work`` first
    (and restored if the move fails), so the caller's clean-up of ``work`` deletes it. Ctrl-C and
    SIGTERM wait until both renames are done: an existing ``out`` is never lost between them."""
    with _signals_deferred():
        _swap(new, out, work)


def _swap(new: Path, out: Path, work: Path) -> None:
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
