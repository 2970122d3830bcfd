"""One run as one ``python -m mmspubench.cli eval ...`` process: the command, its log, its error line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from mmspubench.redact import clean

BAD_INPUT = 2
"""eval's exit status for an input it refused (guard.EXIT_BAD_INPUT): another attempt fails the same way."""
LINE_BYTES = 1 << 16
"""The longest piece of a log line copied at once (a progress bar without a newline stays bounded)."""
STOP_SECONDS = 30.0
"""How long a stopped run may take to unwind (eval removes its partial output) before it is killed."""


def eval_command(argv: Sequence[str]) -> list[str]:
    """The command that runs ``mmspubench eval`` with ``argv`` in this Python."""
    return [sys.executable, "-m", "mmspubench.cli", "eval", *argv]


def error_line(text: str, code: int | None) -> str:
    """The last non-empty line a failed run printed (masked), or its exit status; a run killed by a
    signal (``kill -9``, out of memory) says so."""
    lines = [line.strip() for line in clean(text).splitlines() if line.strip()]
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        last = f"; last log line: {lines[-1][:300]}" if lines else ""
        return f"eval was killed by {name}{last}"
    return lines[-1][:500] if lines else f"eval exited with status {code}"


def _copy(stream: IO[bytes], log: Path) -> None:
    """The child's output into ``log`` line by line through the redaction (a key it prints never
    reaches the file)."""
    with log.open("ab") as handle:
        for raw in iter(lambda: stream.readline(LINE_BYTES), b""):
            text = raw.decode("utf-8", "replace").replace("\r", "\n")
            handle.write(clean(text).encode("utf-8"))
            handle.flush()
    stream.close()


def start(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], threading.Thread]:
    """Start the run, its output appended to ``log`` (masked) by the returned thread."""
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        eval_command(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout is not None
    copier = threading.Thread(target=_copy, args=(proc.stdout, log), daemon=True)
    copier.start()
    return proc, copier


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
