"""The sweep's root: its lock, the state of each run folder and ``sweep.json`` (written atomically).

A run's state is read from its folder first (eval's own files, through ``eval/results.py``):
``finished`` (results.json and a complete samples.jsonl of as many items), ``partial`` (a run
folder eval started), else what ``sweep.json`` says of the last attempt (``failed``,
``submitted``), else ``new``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.json_strict import load_file
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import (
    MANIFEST_NAME,
    RESULTS_NAME,
    SAMPLES_NAME,
    read_finished_samples,
    write_json_atomic,
)
from mmspubench.eval.results_file import read_results_file
from mmspubench.sweep.spec import PlannedRun

STATUS_NAME = "sweep.json"
LOCK_NAME = ".sweep.lock"
STATES = ("new", "partial", "finished", "failed", "submitted", "other")
"""``other``: the folder holds a finished run of other options or another dataset commit (not touched)."""


def now() -> str:
    """UTC time with microseconds (start and end of each attempt)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold ``root/.sweep.lock`` for the whole sweep; a second sweep on the same root is refused."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise MMSpuBenchError(
            f"{root}: another sweep is running on this root right now; wait for it to end"
        ) from None
    try:
        yield
    finally:
        os.close(fd)


def finished(folder: Path) -> bool:
    """Whether ``folder`` holds a finished run: results.json and all its samples."""
    if not (folder / RESULTS_NAME).is_file():
        return False
    try:
        results = read_results_file(folder / RESULTS_NAME)
        samples = read_finished_samples(folder / SAMPLES_NAME)
    except MMSpuBenchError:
        return False
    return results.dataset is not None and results.dataset.n == len(samples)


def started(folder: Path) -> bool:
    """Whether eval left a run in ``folder`` (its manifest or samples) that a rerun resumes."""
    return (folder / MANIFEST_NAME).is_file() or (folder / SAMPLES_NAME).is_file()


_FIX = "fix or remove the file (the run folders hold the results; a removed file is rebuilt from them)"


def _checked_entry(path: Path, name: str, entry: Any) -> dict[str, Any]:
    """One run's record as written by :meth:`Status.save` (an edited file: one line, not a traceback)."""
    where = f"{path}: run {name!r}"
    if not isinstance(entry, dict):
        raise MMSpuBenchError(f"{where}: expected an object, got {entry!r:.60}; {_FIX}")
    state = entry.get("state", "new")
    if state not in STATES:
        raise MMSpuBenchError(
            f"{where}: field 'state': {state!r:.60} is not one of {', '.join(STATES)}; {_FIX}"
        )
    attempts = entry.get("attempts", [])
    if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
        raise MMSpuBenchError(f"{where}: field 'attempts': expected a list of objects; {_FIX}")
    for key in ("error", "job_id"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise MMSpuBenchError(
                f"{where}: field {key!r}: expected a string or null, got {entry[key]!r:.60}; {_FIX}"
            )
    return {**entry, "state": state, "attempts": attempts}


class Status:
    """``sweep.json``: per run its state, attempts (start, end, error) and job id; saved on each change."""

    def __init__(self, root: Path, launcher: str) -> None:
        self.path = root / STATUS_NAME
        self.runs: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            obj = load_file(self.path)
            runs = obj.get("runs") if isinstance(obj, dict) else None
            if not isinstance(runs, dict):
                raise MMSpuBenchError(f"{self.path}: field 'runs': expected an object; {_FIX}")
            self.runs = {str(k): _checked_entry(self.path, str(k), v) for k, v in runs.items()}
        self.launcher = launcher

    def entry(self, name: str) -> dict[str, Any]:
        """The record of run ``name`` (empty for a run never attempted)."""
        return self.runs.setdefault(name, {"state": "new", "attempts": []})

    def state(self, run: PlannedRun) -> str:
        """The state of a run: from its folder, then from its last recorded attempt."""
        from mmspubench.sweep.verify import other_run

        name, folder = run.name, run.folder
        if finished(folder):
            return "other" if other_run(folder, run) is not None else "finished"
        recorded = self.runs.get(name, {}).get("state")
        if recorded == "submitted":
            return "submitted"
        if started(folder):
            return "partial"
        return "failed" if recorded == "failed" else "new"

    def record(self, name: str, update: Mapping[str, Any], attempt: Mapping[str, Any] | None = None) -> None:
        """Change run ``name``'s record (and append an attempt), then save the file."""
        entry = self.entry(name)
        entry.update(update)
        if attempt is not None:
            entry["attempts"] = [*entry.get("attempts", []), dict(attempt)]
        self.save()

    def sync(self, runs: Sequence[PlannedRun]) -> list[PlannedRun]:
        """Record the runs whose folder is finished (or holds another run) but whose record says
        otherwise: a run that finished as the sweep was stopped, a job collected late. Returns them."""
        changed = []
        for run in runs:
            state = self.state(run)
            entry = self.runs.get(run.name)
            if state in ("finished", "other") and (entry is None or entry.get("state") != state):
                self.entry(run.name).update({"state": state, "error": None})
                changed.append(run)
        if changed:
            self.save()
        return changed

    def save(self) -> None:
        """Write ``sweep.json`` atomically (a temporary file, fsync, rename)."""
        write_json_atomic(self.path, {"launcher": self.launcher, "updated_at": now(), "runs": self.runs})
