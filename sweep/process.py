"""One run as one ``python -m mmspubench.cli eval ...`` process: the command, its log, its error line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mmspubench.redact import clean

STOP_SECONDS = 30.0
"""How long a stopped run may take to unwind (eval removes its partial output) before it is killed."""


def eval_command(argv: Sequence[str]) -> list[str]:
    """The command that runs ``mmspubench eval`` with ``argv`` in this Python."""
    return [sys.executable, "-m", "mmspubench.cli", "eval", *argv]


def error_line(text: str, code: int | None) -> str:
    """The last non-empty line a failed run printed (masked), or its exit status."""
    lines = [line.strip() for line in clean(text).splitlines() if line.strip()]
    return lines[-1][:500] if lines else f"eval exited with status {code}"


def start(argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start the run, its output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as handle:
        return subprocess.Popen(
            eval_command(argv),
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """Ask each running process to stop as Ctrl-C does (SIGINT), wait, then kill what is left."""
    for proc in processes:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in processes:
        try:
            proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def tail(log: Path, offset: int) -> str:
    """What ``log`` got after ``offset`` (the output of one attempt), at most its last 8 KiB."""
    with log.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(offset, size - 8192))
        return handle.read().decode("utf-8", "replace")
