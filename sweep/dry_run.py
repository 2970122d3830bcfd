"""``mmspubench sweep --dry-run``: the plan, and the ``mmspubench eval`` command of every run.

Offline and read-only: nothing is written, no job is sent, no wheel is built. Paths under the
current folder are shown relative to it, so each command line can be pasted as it is.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from mmspubench.redact import clean
from mmspubench.sweep.launchers.plugin import Launcher
from mmspubench.sweep.spec import PlannedRun, Sweep
from mmspubench.sweep.state import Status

PATH_FLAGS = ("--model", "--dataset", "--out")
"""Arguments holding a path (shown relative to the current folder when under it)."""


def shown_path(path: str | Path) -> str:
    """``path`` relative to the current folder when it lies under it, else as it is."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    rel = os.path.relpath(text, os.getcwd())
    return text if rel == ".." or rel.startswith(".." + os.sep) else rel


def command_line(run: PlannedRun) -> str:
    """The run's ``mmspubench eval`` command, shell-quoted."""
    args = list(run.argv)
    for i, arg in enumerate(args[:-1]):
        if arg in PATH_FLAGS:
            args[i + 1] = shown_path(args[i + 1])
    return " ".join(["mmspubench", "eval", *(shlex.quote(a) for a in args)])


def plan_table(sweep: Sweep, status: Status) -> str:
    """The plan as a Markdown table: run folder, model, options, state."""
    lines = ["| run folder | model | options | state |", "|---|---|---|---|"]
    for run in sweep.runs:
        model = run.argv.index("--model")
        shown = " ".join(shlex.quote(a) for a in run.argv[:model] + run.argv[model + 2 : -2])
        cells = [shown_path(run.folder), run.model_name, shown, status.state(run)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def show(sweep: Sweep, launcher: Launcher, settings: object) -> int:
    """Print the plan table, then one eval command line per run, then the launcher's note."""
    print(clean(plan_table(sweep, Status(sweep.root, launcher.name))))
    print()
    print(clean("\n".join(command_line(run) for run in sweep.runs)))
    note = launcher.dry_note(sweep, settings) if launcher.dry_note is not None else None
    if note:
        print()
        print(note)
    return 0
