"""The top-level guard every ``mmspubench`` command runs under: no traceback ever reaches a user.

- ``MMSpuBenchError`` (bad input) and ``OSError`` (a bad environment: disk full, no permission, an
  I/O error) print one line and exit 2.
- Ctrl-C exits 130 and SIGTERM exits 143; both unwind through every ``finally``, so staging folders
  and temporary files are removed exactly as on an error.
- Anything else is a bug: one line naming the log file that holds the full traceback, exit 1.

Every line printed and every log written passes :func:`mmspubench.redact.clean` first: a message
built from a server's or a model's text can neither show a key nor drive the terminal.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any

from mmspubench.errors import Interrupted, MMSpuBenchError
from mmspubench.redact import clean

EXIT_BAD_INPUT = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_PIPE_CLOSED = 141
"""The status of a program killed by SIGPIPE (128 + 13): the reader of its output went away."""
LOG_DIR_ENV = "MMSPUBENCH_LOG_DIR"
"""Folder for the traceback logs of unexpected errors (default: ``<tempdir>/mmspubench-logs``)."""


class Terminated(BaseException):
    """Raised in the main thread when the process receives SIGTERM (unwinds like Ctrl-C)."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While active (main thread only), SIGTERM raises ``Terminated`` so ``finally`` blocks run."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_log(command: str, err: BaseException) -> Path | None:
    """Write the full traceback of ``err`` to a new log file; its path, or ``None`` if that failed."""
    folder = Path(os.environ.get(LOG_DIR_ENV) or Path(tempfile.gettempdir()) / "mmspubench-logs")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"{command}-{stamp}-", suffix=".log", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(clean(f"mmspubench {command}: {' '.join(sys.argv)}\n"))
            handle.write(clean("".join(traceback.format_exception(err))))
    except OSError:
        return None
    return Path(name)


def _one_line(text: str) -> str:
    lines = [line for line in clean(text).strip().splitlines() if line.strip()]
    return " ".join(line.strip() for line in lines) if lines else ""


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (so a write there raised the error)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), no real stdout
        return False


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's final flush raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _os_message(err: OSError) -> str:
    where = f"{clean(str(err.filename))}: " if err.filename else ""
    return f"{where}{_one_line(err.strerror or str(err)) or type(err).__name__}"


def run_guarded(command: str, func: Callable[[Any], int], args: Any) -> int:
    """Run ``func(args)`` for the subcommand ``command``; returns the process exit status."""
    prefix = f"mmspubench {command}"
    try:
        with sigterm_unwinds():
            return func(args)
    except MMSpuBenchError as err:
        print(f"{prefix}: error: {_one_line(str(err))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as err:
        # with what was kept; on a terminal, on a line of its own (after the echoed ^C)
        hint = f"; {_one_line(str(err))}" if isinstance(err, Interrupted) and str(err) else ""
        lead = "\n" if _isatty(sys.stderr) else ""
        print(f"{lead}{prefix}: interrupted{hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(f"{prefix}: terminated (SIGTERM); partial output removed", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError as err:
        if not _stdout_reader_gone():
            print(f"{prefix}: error: {_os_message(err)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        # The reader of stdout stopped reading (`report | head -1`): nothing more to say to it,
        # and nothing is wrong; end as a program killed by SIGPIPE does, silently.
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except OSError as err:
        print(f"{prefix}: error: {_os_message(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:  # an input too large for this machine: an environment limit, not a bug
        print(
            f"{prefix}: error: out of memory (the input is too large for the memory available)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except Exception as err:  # a bug: the user gets one line, the maintainer the full traceback
        log = write_log(command, err)
        where = f"; full traceback in {log}" if log else ""
        print(
            f"{prefix}: internal error ({type(err).__name__}: {_one_line(str(err))[:300]}){where}",
            file=sys.stderr,
        )
        return EXIT_BUG
