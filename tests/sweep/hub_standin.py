"""A stand-in for the Hub's Jobs API: the job's command runs as a local process, nothing leaves the machine.

It takes the calls the hf-jobs launcher makes with huggingface_hub's signatures (``run_uv_job``,
``wait_for_job``, ``inspect_job``, ``fetch_job_logs``, ``list_jobs_hardware``, ``snapshot_download``,
``cancel_job``), records each one, ships the local files among the script and its arguments into the
job's ``/data`` (a folder), honours the timeout (the process is killed: stage ERROR) and serves the
uploaded run folders back from a local "Hub" folder.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(timeout: int | float | str | None) -> float | None:
    if timeout is None:
        return None
    text = str(timeout)
    return float(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else float(text)


@dataclass
class _Job:
    proc: subprocess.Popen[bytes]
    log: Path
    started: float
    limit: float | None
    stage: str = "RUNNING"
    message: str | None = None


@dataclass(frozen=True)
class _Client:
    """A client of the stand-in made with one token (``HfApi(token=...)``)."""

    jobs: StandInJobs
    token: Any

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.jobs, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            before = len(self.jobs.calls)
            try:
                return method(*args, **kwargs)
            finally:
                used = kwargs.get("token", self.token)
                self.jobs.tokens.extend((called, used) for called, _ in self.jobs.calls[before:])

        return call


@dataclass
class StandInJobs:
    """The Jobs API as local processes; ``tamper`` edits a run folder once its job completed."""

    root: Path
    hardware: tuple[str, ...] = ("cpu-basic", "cpu-upgrade", "t4-small", "a10g-large")
    tamper: Callable[[str, Path], None] | None = None
    leak_secret: bool = False
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    tokens: list[tuple[str, Any]] = field(default_factory=list)
    """Each call's name and the token it was made with (the client's, or a ``token=`` of the call)."""
    jobs: dict[str, _Job] = field(default_factory=dict)

    def client(self, token: Any = None) -> _Client:
        """What ``HfApi(token=token)`` is to the Hub: every call of it records ``token``."""
        return _Client(self, token)

    @property
    def hub(self) -> Path:
        return self.root / "hub"

    def list_jobs_hardware(self, token: Any = None) -> list[Any]:
        self.calls.append(("list_jobs_hardware", {}))
        return [SimpleNamespace(name=n) for n in self.hardware]

    def _ship(self, job_id: str, items: list[str]) -> list[str]:
        data = self.root / "jobs" / job_id / "data"
        data.mkdir(parents=True, exist_ok=True)
        shipped = []
        for item in items:
            if Path(item).is_file():
                shutil.copy(item, data / Path(item).name)
                shipped.append(str(data / Path(item).name))
            else:
                shipped.append(item)
        return shipped

    def run_uv_job(self, script: str, *, script_args: list[str] | None = None, **kwargs: Any) -> Any:
        self.calls.append(
            ("run_uv_job", {"script": script, "script_args": list(script_args or []), **kwargs})
        )
        job_id = f"job{len(self.jobs) + 1:03d}"
        script_path, *args = self._ship(job_id, [script, *(script_args or [])])
        secrets = dict(kwargs.get("secrets") or {})
        env = {k: v for k, v in os.environ.items() if k not in secrets}  # the job sees secrets only as given
        env.update({k: str(v) for k, v in (kwargs.get("env") or {}).items()})
        env.update(secrets)
        env["PATH"] = f"{HERE / 'standin_bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = f"{HERE / 'standin_site'}{os.pathsep}{env.get('PYTHONPATH', '')}"
        env["STANDIN_HUB"] = str(self.hub)
        self.hub.mkdir(parents=True, exist_ok=True)
        log = self.root / "jobs" / job_id / "log.txt"
        with log.open("wb") as handle:
            if self.leak_secret:  # a careless job printing its environment
                handle.write(f"job env: HF_TOKEN={secrets.get('HF_TOKEN')}\n".encode())
                handle.flush()
            proc = subprocess.Popen(
                [sys.executable, script_path, *args], stdout=handle, stderr=subprocess.STDOUT, env=env
            )
        self.jobs[job_id] = _Job(proc, log, time.monotonic(), seconds(kwargs.get("timeout")))
        return self._info(job_id)

    def _info(self, job_id: str) -> Any:
        job = self.jobs[job_id]
        return SimpleNamespace(id=job_id, status=SimpleNamespace(stage=job.stage, message=job.message))

    def _poll(self, job_id: str) -> None:
        job = self.jobs[job_id]
        if job.stage != "RUNNING":
            return
        code = job.proc.poll()
        if code is None and job.limit is not None and time.monotonic() - job.started > job.limit:
            job.proc.kill()
            job.proc.wait()
            job.stage, job.message = "ERROR", "Job timeout"
        elif code is not None:
            job.stage = "COMPLETED" if code == 0 else "ERROR"
            job.message = None if code == 0 else f"exit code {code}"
            if code == 0 and self.tamper is not None:
                self.tamper(job_id, self.hub)

    def wait_for_job(
        self, job_id: str, *, timeout: float | None = None, poll_interval: float = 1.0, **kwargs: Any
    ) -> Any:
        self.calls.append(("wait_for_job", {"job_id": job_id, "timeout": timeout, **kwargs}))
        while True:
            self._poll(job_id)
            if self.jobs[job_id].stage != "RUNNING":
                return self._info(job_id)  # never raises: the caller reads status.stage
            time.sleep(0.1)

    def inspect_job(self, *, job_id: str, **kwargs: Any) -> Any:
        self.calls.append(("inspect_job", {"job_id": job_id, **kwargs}))
        self._poll(job_id)
        return self._info(job_id)

    def fetch_job_logs(self, *, job_id: str, **kwargs: Any) -> Iterator[str]:
        self.calls.append(("fetch_job_logs", {"job_id": job_id, **kwargs}))
        return iter(self.jobs[job_id].log.read_text(encoding="utf-8", errors="replace").splitlines())

    def cancel_job(self, *, job_id: str, **kwargs: Any) -> None:
        self.calls.append(("cancel_job", {"job_id": job_id, **kwargs}))
        self.jobs[job_id].proc.kill()

    def snapshot_download(
        self,
        repo_id: str,
        *,
        repo_type: str | None = None,
        allow_patterns: Any = None,
        local_dir: str | None = None,
        **kwargs: Any,
    ) -> str:
        self.calls.append(
            (
                "snapshot_download",
                {"repo_id": repo_id, "repo_type": repo_type, "allow_patterns": allow_patterns},
            )
        )
        source, target = self.hub / repo_id, Path(str(local_dir))
        patterns = [allow_patterns] if isinstance(allow_patterns, str) else list(allow_patterns or ["*"])
        for path in source.rglob("*") if source.is_dir() else []:
            rel = path.relative_to(source).as_posix()
            if path.is_file() and any(fnmatch.fnmatch(rel, p) for p in patterns):
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target / rel)
        return str(target)
