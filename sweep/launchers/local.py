"""``--launcher local``: runs as processes of this machine, ``--max-parallel`` at once.

With ``--gpus 0,1`` each GPU is a slot: a run gets ``CUDA_VISIBLE_DEVICES`` of its slot's GPU
and a slot holds one run at a time, so two runs never share a GPU. Each run is its own
``mmspubench eval`` process (its output in ``root/logs/<run>.log``), so a run's figures are
those of the same command run alone.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmspubench.sweep import process
from mmspubench.sweep.launchers.plugin import Context, Launcher, Outcome
from mmspubench.sweep.spec import PlannedRun
from mmspubench.sweep.state import now

POLL_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class _Started:
    run: PlannedRun
    slot: int
    proc: subprocess.Popen[bytes]
    copier: threading.Thread
    log: Path
    offset: int
    started_at: str


def slots(max_parallel: int | None, gpus: Sequence[str]) -> list[str | None]:
    """One entry per run at once: a GPU id each with ``gpus`` (at most ``max_parallel`` of them)."""
    if gpus:
        return list(gpus[: max_parallel or len(gpus)])
    return [None] * (max_parallel or 1)


def _start(context: Context, run: PlannedRun, slot: int, gpu: str | None) -> _Started:
    log = context.sweep.root / "logs" / f"{run.name}.log"
    offset = log.stat().st_size if log.is_file() else 0
    env = {"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None
    proc, copier = process.start(run.argv, log, env)
    context.started(run, "running" + (f" on GPU {gpu}" if gpu is not None else ""))
    return _Started(run, slot, proc, copier, log, offset, now())


def _ended(item: _Started, gpu: str | None) -> Outcome:
    item.copier.join(timeout=10)  # the log is complete before its last line is read
    code = item.proc.returncode
    error = None if code == 0 else process.error_line(process.tail(item.log, item.offset), code)
    where = "this machine" if gpu is None else f"GPU {gpu}"
    state = "finished" if code == 0 else "failed"
    permanent = code == process.BAD_INPUT
    return Outcome(item.run.name, state, item.started_at, now(), error, where=where, permanent=permanent)


def launch(context: Context, runs: Sequence[PlannedRun]) -> None:
    """Run ``runs`` in order, as many at once as there are slots; report each as it ends."""
    free = slots(context.options.max_parallel, context.options.gpus)
    waiting, running = list(runs), list[_Started]()
    idle = list(range(len(free)))
    try:
        while waiting or running:
            while waiting and idle:
                slot = idle.pop(0)
                running.append(_start(context, waiting.pop(0), slot, free[slot]))
            time.sleep(POLL_SECONDS)
            for item in [r for r in running if r.proc.poll() is not None]:
                running.remove(item)
                idle.append(item.slot)
                context.report(_ended(item, free[item.slot]))
    finally:
        process.stop([r.proc for r in running])  # Ctrl-C, SIGTERM: the started runs stop too


LAUNCHER = Launcher(name="local", launch=launch)
