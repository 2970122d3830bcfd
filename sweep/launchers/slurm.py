"""``--launcher slurm``: one job per run, submitted as one job array through ``submitit``.

SWEEP.yaml's ``slurm:`` section holds the resources (:class:`SlurmSettings`); ``local: true``
uses submitit's local executor instead of a cluster (real processes on this machine, the same
run folders), which is how it is tested. Each job runs the run's ``mmspubench eval`` command;
with ``--no-wait`` the job ids go into ``sweep.json`` and a later ``sweep`` collects them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.extras import require
from mmspubench.options import option
from mmspubench.redact import clean
from mmspubench.sweep import process
from mmspubench.sweep.launchers.plugin import Context, Launcher, Outcome
from mmspubench.sweep.spec import PlannedRun
from mmspubench.sweep.state import now

POLL_SECONDS = 0.5
TOOLS = ("sbatch", "srun")
"""Slurm's commands submitit calls (its Slurm executor refuses to start without them)."""
_JOB_ID = re.compile(r"[0-9]+(_[0-9]+)?")
"""A Slurm job id (``123``, an array task ``123_4``); a local job's id is its process id."""


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    """SWEEP.yaml ``slurm:``: the resources of each job (submitit's parameters)."""

    partition: str | None = option(None, "Slurm partition")
    """``--partition``."""
    gpus_per_node: int | None = option(None, "GPUs per job", arg_type=int, minimum=0, expect="0 or more")
    """GPUs of each job."""
    cpus_per_task: int | None = option(None, "CPUs per job", arg_type=int, minimum=1, expect="1 or more")
    """CPUs of each job."""
    mem_gb: int | None = option(None, "memory per job in GB", arg_type=int, minimum=1, expect="1 or more")
    """Memory of each job."""
    timeout_min: int = option(
        240, "time limit of each job in minutes", arg_type=int, minimum=1, expect="1 or more"
    )
    """Time limit of each job."""
    account: str | None = option(None, "Slurm account")
    """``--account``."""
    qos: str | None = option(None, "Slurm QOS")
    """``--qos``."""
    constraint: str | None = option(None, "Slurm constraint")
    """``--constraint``."""
    array_parallelism: int | None = option(
        None, "jobs of the array running at once", arg_type=int, minimum=1, expect="1 or more"
    )
    """``%N`` of the job array."""
    local: bool = option(False, "run the jobs with submitit's local executor on this machine")
    """Local executor (no cluster): for tests and a first try."""


def run_job(argv: Sequence[str]) -> dict[str, Any]:
    """The job's body: the run's eval command; its exit status and error line (what the sweep reads)."""
    done = subprocess.run(process.eval_command(argv), capture_output=True, text=True, check=False)
    print(clean(done.stdout), end="", flush=True)  # submitit's log files: no key a run printed
    print(clean(done.stderr), end="", file=sys.stderr, flush=True)
    error = None if done.returncode == 0 else process.error_line(done.stderr, done.returncode)
    return {"code": done.returncode, "error": error}


def _parameters(settings: SlurmSettings) -> dict[str, Any]:
    given = {k: getattr(settings, k) for k in SlurmSettings.__dataclass_fields__ if k != "local"}
    generic = ("gpus_per_node", "cpus_per_task", "mem_gb", "timeout_min")
    params = {k: v for k, v in given.items() if k in generic and v is not None}
    if not settings.local:
        params.update({f"slurm_{k}": v for k, v in given.items() if k not in generic and v is not None})
    return params


def _executor(context: Context) -> Any:
    import submitit

    folder = context.work_dir("submitit")
    settings: SlurmSettings = context.settings
    executor = (
        submitit.LocalExecutor(folder) if settings.local else submitit.AutoExecutor(folder, cluster="slurm")
    )
    executor.update_parameters(**_parameters(settings))
    return executor


def _outcome(run: PlannedRun, job: Any, started_at: str) -> Outcome:
    try:
        exc = job.exception()
        result = job.result() if exc is None else None
    except Exception as err:  # submitit reports a lost or killed job by raising (its own types)
        exc, result = err, None
    lines = str(exc).strip().splitlines() if exc is not None else []
    error = (lines[-1][:500] if lines else type(exc).__name__) if exc is not None else None
    code = (result or {}).get("code")
    error = clean(error or (result or {}).get("error") or f"eval exited with status {code}")
    state = "finished" if exc is None and code == 0 else "failed"
    job_id = str(job.job_id)
    return Outcome(
        run.name,
        state,
        started_at,
        now(),
        error if state == "failed" else None,
        job_id,
        job_id,
        permanent=code == process.BAD_INPUT,
    )


def launch(context: Context, runs: Sequence[PlannedRun]) -> None:
    """Submit ``runs`` as one job array; wait for them unless ``--no-wait``."""
    started_at = now()
    try:
        executor = _executor(context)
        with executor.batch():
            jobs = [executor.submit(run_job, list(run.argv)) for run in runs]
    except Exception as err:  # submitit raises sbatch's refusal as its own types: each run fails, one line
        error = clean(f"job not submitted: {first_line(err, 300)}")
        for run in runs:
            context.report(Outcome(run.name, "failed", started_at, now(), error))
        return
    if context.options.no_wait:
        for run, job in zip(runs, jobs, strict=True):
            context.report(Outcome(run.name, "submitted", started_at, job_id=str(job.job_id)))
        return
    for run, job in zip(runs, jobs, strict=True):
        context.started(run, f"running as job {job.job_id}")
    waiting = list(zip(runs, jobs, strict=True))
    try:
        while waiting:
            time.sleep(POLL_SECONDS)
            for run, job in [w for w in waiting if w[1].done()]:
                waiting.remove((run, job))
                context.report(_outcome(run, job, started_at))
    finally:
        for _, job in waiting:  # Ctrl-C: the submitted jobs are cancelled, not left running
            job.cancel(check=False)


def collect(context: Context, run: PlannedRun, job_id: str) -> Outcome | None:
    """The outcome of a job submitted by an earlier ``--no-wait`` sweep (``None``: still running); a
    job id that is not one (an edited sweep.json) or a job submitit cannot read is a failed run."""
    if not _JOB_ID.fullmatch(job_id):
        error = f"sweep.json: job id {job_id!r} is not a Slurm job id; the run is started again"
        return Outcome(run.name, "failed", now(), now(), clean(error), job_id)
    try:
        return _collected(context, run, job_id)
    except Exception as err:  # submitit and sacct's errors: the run fails in one line, the sweep goes on
        error = clean(f"cannot read job {job_id}: {first_line(err, 300)}")
        return Outcome(run.name, "failed", now(), now(), error, job_id)


def _collected(context: Context, run: PlannedRun, job_id: str) -> Outcome | None:
    import submitit

    folder = context.work_dir("submitit")
    if context.settings.local:
        from submitit.local.local import LocalJob

        job: Any = LocalJob(folder, job_id)
        if not job.paths.result_pickle.exists():
            return (
                None
                if _alive(job_id)
                else Outcome(run.name, "failed", now(), now(), "job ended without a result", job_id)
            )
    else:
        job = submitit.SlurmJob(folder, job_id)
        if not job.done():
            return None
    return _outcome(run, job, now())


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return False
    return True


def check(context: Context) -> None:
    """submitit must be installed (the ``sweep`` extra), and Slurm's commands on PATH (a cluster)."""
    require("sweep --launcher slurm", ["submitit"], extra="sweep")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing and not context.settings.local:
        raise MMSpuBenchError(
            f"--launcher slurm: {missing[0]!r} is not on PATH (not a Slurm cluster's node?); run the "
            f"sweep where Slurm's commands are, or try it on this machine with 'local: true' in {context.sweep.path}'s slurm section"
        )


LAUNCHER = Launcher(
    name="slurm", launch=launch, section="slurm", settings=SlurmSettings, check=check, collect=collect
)
