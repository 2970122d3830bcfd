"""``--launcher hf-jobs``: each run as a Hugging Face Job (``HfApi.run_uv_job``).

Before anything is sent: the token's environment variable is set, and the flavor is one that
``list_jobs_hardware`` lists (``--dry-run`` stays offline and says it did not check). The job gets
the wheel of this checkout (built once per sweep, same version; shipped as a local file of the
job), the job script ``sweep/hf_job_script.py``, the token as a secret by name, and the timeout.
The job uploads its run folder to the results dataset repo; the launcher waits
(``wait_for_job``, which never raises: the outcome is ``status.stage``), fetches the folder back,
verifies it as ``submit`` would (``sweep/verify.py``) and only then puts it in the run folder.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.results import package_version
from mmspubench.options import option
from mmspubench.redact import clean, register_secret
from mmspubench.sweep import wheel
from mmspubench.sweep.launchers import hf_jobs_checks as checks
from mmspubench.sweep.launchers.plugin import Context, Launcher, Outcome
from mmspubench.sweep.spec import PlannedRun, Sweep
from mmspubench.sweep.state import now

SCRIPT = Path(__file__).resolve().parents[1] / "hf_job_script.py"
EVAL_REFUSED = "mmspubench eval: error:"
"""How eval's line for an input it refused (exit status 2) begins: a job ending on it is not retried."""
TERMINAL = ("COMPLETED", "CANCELED", "ERROR", "DELETED")


@dataclass(frozen=True, slots=True)
class HfJobsSettings:
    """SWEEP.yaml ``hf_jobs:``: where and how each run's job runs, and where its folder goes."""

    results_repo: str = option(
        dataclasses.MISSING, "dataset repo the jobs upload their run folders to (org/name)"
    )
    """The results dataset repo."""
    flavor: str = option("cpu-basic", "hardware flavor, one of list_jobs_hardware's names")
    """``run_uv_job(flavor=)``."""
    timeout: int | str = option("2h", "time limit of each job: seconds, or with s, m, h, d (e.g. 90m, 1.5h)")
    """``run_uv_job(timeout=)``: whole seconds once read (``3600``, ``"90m"``, ``"1.5h"`` as the Hub reads them)."""
    results_path: str = option("sweeps", "folder of the repo holding <root name>/<run> folders")
    """Path in the repo; a run goes to ``<results_path>/<root name>/<run name>``."""
    extras: str = option("eval", "extras installed with the wheel in the job (e.g. eval,models)")
    """``mm-spubench[<extras>]``."""
    token_env: str = option(
        "HF_TOKEN", "environment variable holding the token, sent as a secret of that name"
    )
    """The secret's name (its value is read here and sent only as a secret)."""
    namespace: str | None = option(None, "namespace of the jobs (default: the token's user)")
    """``run_uv_job(namespace=)``."""
    python: str | None = option(None, "Python version of the job (default: the Jobs default)")
    """``run_uv_job(python=)``."""

    def __post_init__(self) -> None:
        """Every value checked when SWEEP.yaml is read (before ``--dry-run``, before any job)."""
        checks.check_repo_id(self.results_repo)
        object.__setattr__(self, "timeout", checks.timeout_seconds(self.timeout))
        object.__setattr__(self, "results_path", checks.repo_folder(self.results_path))
        checks.check_variable(self.token_env)
        checks.check_extras(self.extras)
        checks.check_namespace(self.namespace)
        checks.check_python(self.python)


def make_api(token: str) -> Any:
    """The Hub client, every call of it made with ``token`` (a test replaces this with a stand-in
    that runs jobs as local processes)."""
    from huggingface_hub import HfApi

    return HfApi(token=token)


def _token(settings: HfJobsSettings) -> str:
    """The token in ``$token_env`` (registered for masking); one line naming the variable if unset."""
    token = os.environ.get(settings.token_env)
    if token is None or not token.strip():
        state = "is not set" if token is None else "is empty"
        raise MMSpuBenchError(
            f"--launcher hf-jobs: ${settings.token_env} {state}; the jobs and the Hub calls need a token"
        )
    register_secret(token)  # from here on no printed line or log can show it
    return token


def check(context: Context) -> None:
    """Token set, flavor listed by ``list_jobs_hardware``: before anything is sent."""
    settings: HfJobsSettings = context.settings
    token = _token(settings)
    try:
        names = [h.name for h in make_api(token).list_jobs_hardware()]
    except Exception as err:  # the Hub client raises its HTTP and network errors
        raise MMSpuBenchError(f"cannot list the Jobs hardware ({first_line(err, 200)})") from None
    if settings.flavor not in names:
        raise MMSpuBenchError(
            f"{context.sweep.path}: hf_jobs: flavor {settings.flavor!r} is not offered; expected one of {', '.join(names)}"
        )


def _job_args(settings: HfJobsSettings, root: Path, run: PlannedRun, wheel_file: str) -> list[str]:
    """The job script's arguments (the job writes its own ``--out``)."""
    path = f"{settings.results_path}/{root.name}/{run.name}"
    return [
        wheel_file,
        settings.extras,
        settings.results_repo,
        path,
        settings.token_env,
        "--",
        *run.argv[:-2],
    ]


def dry_note(sweep: Sweep, settings: HfJobsSettings | None) -> str:
    """What ``--dry-run`` shows: each job as it would be sent (no Hub call, no wheel built), the
    secret by its name only, and that the flavor was not checked."""
    if settings is None:
        return "hf-jobs: no hf_jobs section"
    name = wheel.wheel_name()
    lines = [
        f"hf-jobs: {len(sweep.runs)} jobs, flavor {settings.flavor}, timeout {settings.timeout} s, "
        f"secret {settings.token_env} (sent by name; its value is never shown), wheel {name} "
        f"(version {package_version()}, built from this checkout when the sweep runs) with extras "
        f"{settings.extras}, results to the dataset repo {settings.results_repo}"
    ]
    for run in sweep.runs:
        args = " ".join(shlex.quote(a) for a in _job_args(settings, sweep.root, run, name))
        lines.append(f"job {run.name}: uv run {SCRIPT.name} {args}")
    lines.append(
        f"hf-jobs: flavor {settings.flavor!r} was not checked (--dry-run stays offline; a real sweep checks it first)"
    )
    return clean("\n".join(lines))


def _repo_path(context: Context, run: PlannedRun) -> str:
    return _job_args(context.settings, context.sweep.root, run, "")[3]


def _submit(context: Context, api: Any, run: PlannedRun, built: Path, token: str) -> Any:
    settings: HfJobsSettings = context.settings
    return api.run_uv_job(
        str(SCRIPT),
        script_args=_job_args(settings, context.sweep.root, run, str(built)),
        python=settings.python,
        secrets={settings.token_env: token},
        flavor=settings.flavor,
        timeout=settings.timeout,
        name=f"mmspubench-{run.name}"[:60],
        labels={"mmspubench-sweep": context.sweep.root.name[:60]},
        namespace=settings.namespace,
    )


def _stage(info: Any) -> tuple[str, str]:
    """The job's stage and message, read defensively (a status without a stage reads ``UNKNOWN``)."""
    status = getattr(info, "status", None)
    if isinstance(status, dict):  # a client that hands the raw JSON on
        status = SimpleNamespace(**{k: v for k, v in status.items() if isinstance(k, str)})
    stage = getattr(status, "stage", None)
    stage = getattr(stage, "value", stage)
    return (str(stage) if stage else "UNKNOWN"), str(getattr(status, "message", None) or "")


def _status_error(run: PlannedRun, job_id: str, err: BaseException, started_at: str) -> Outcome:
    """A job whose status cannot be read (the client choked on a malformed answer): a failed run."""
    error = clean(f"job {job_id}: cannot read its status ({type(err).__name__}: {first_line(err, 200)})")
    return Outcome(run.name, "failed", started_at, now(), error, job_id, job_id)


def _logs(context: Context, api: Any, run: PlannedRun, job_id: str) -> str:
    """The job's log, masked, kept in root/logs/<run>.log; its last line."""
    try:
        lines = [
            clean(str(line))
            for line in api.fetch_job_logs(job_id=job_id, namespace=context.settings.namespace)
        ]
    except Exception as err:  # a log that cannot be read does not hide the outcome
        return f"(logs unavailable: {first_line(err, 120)})"
    log = context.sweep.root / "logs" / f"{run.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"--- job {job_id}\n" + "\n".join(lines) + "\n")
    shown = [line.strip() for line in lines if line.strip()]
    return shown[-1][:300] if shown else "(no log)"


def _check_tree(staging: Path, fetched: Path) -> None:
    """Only plain files and folders inside the staging folder: no link (copied, it would bring in a
    file of this machine) and nothing outside it."""
    top = staging.resolve()
    for item in [fetched, *fetched.rglob("*")] if fetched.is_dir() else []:
        if item.is_symlink() or not item.resolve().is_relative_to(top):
            raise MMSpuBenchError(f"{item.relative_to(staging)}: a link or a path outside the run folder")
        if not (item.is_file() or item.is_dir()):
            raise MMSpuBenchError(f"{item.relative_to(staging)}: not a plain file")


def _fetch(context: Context, api: Any, run: PlannedRun) -> None:
    from mmspubench.dataset_builder.folders import replace_folder
    from mmspubench.sweep.verify import verify_run

    staging = context.work_dir("hf-jobs") / "fetch" / run.name
    shutil.rmtree(staging, ignore_errors=True)
    path = _repo_path(context, run)
    try:
        api.snapshot_download(
            context.settings.results_repo,
            repo_type="dataset",
            allow_patterns=[f"{path}/*"],
            local_dir=str(staging),
        )
    except Exception as err:  # the client refuses a file named with '..' (ValueError), HTTP errors
        raise MMSpuBenchError(f"cannot download {path}: {first_line(err, 200)}") from None
    fetched = staging / path
    _check_tree(staging, fetched)
    verify_run(fetched, run)
    replace_folder(run.folder, lambda new: shutil.copytree(fetched, new))
    shutil.rmtree(staging, ignore_errors=True)


def _outcome(context: Context, api: Any, run: PlannedRun, info: Any, started_at: str) -> Outcome:
    job_id = str(getattr(info, "id", None))
    stage, message = _stage(info)
    if stage != "COMPLETED":
        last = _logs(context, api, run, job_id)
        error = clean(
            f"job {job_id} ended {stage}" + (f" ({message})" if message else "") + f"; last log line: {last}"
        )
        bad_input = last.startswith(EVAL_REFUSED)  # eval refused its input (exit 2): the same next time
        return Outcome(run.name, "failed", started_at, now(), error, job_id, job_id, permanent=bad_input)
    _logs(context, api, run, job_id)
    try:
        _fetch(context, api, run)
    except MMSpuBenchError as err:
        error = clean(f"job {job_id}: the fetched run does not verify: {first_line(err, 300)}")
        return Outcome(run.name, "failed", started_at, now(), error, job_id, job_id)
    return Outcome(run.name, "finished", started_at, now(), None, job_id, job_id)


def _submitted(
    context: Context, api: Any, runs: Sequence[PlannedRun], built: Path, token: str
) -> list[tuple[PlannedRun, Any]]:
    """Send one job per run; a run whose job the Hub refuses is failed (one line), the others go on."""
    jobs = []
    for run in runs:
        started_at = now()
        try:
            jobs.append((run, _submit(context, api, run, built, token)))
        except Exception as err:  # the Hub client's HTTP errors: this run fails, not the sweep
            context.report(
                Outcome(
                    run.name, "failed", started_at, now(), clean(f"job not created: {first_line(err, 300)}")
                )
            )
    return jobs


def launch(context: Context, runs: Sequence[PlannedRun]) -> None:
    """Build the wheel, submit one job per run, then (unless ``--no-wait``) wait, fetch and verify."""
    token = _token(context.settings)
    api = make_api(token)
    built = wheel.build(context.work_dir("hf-jobs") / "wheel")
    started_at = now()
    waiting = _submitted(context, api, runs, built, token)
    if context.options.no_wait:
        for run, info in waiting:
            context.report(
                Outcome(run.name, "submitted", started_at, job_id=str(info.id), where=str(info.id))
            )
        return
    for run, info in waiting:
        context.started(run, f"running as job {info.id}")
    try:
        while waiting:
            run, info = waiting[0]
            try:
                final = api.wait_for_job(str(info.id), namespace=context.settings.namespace)
            except Exception as err:  # wait_for_job never raises for a job's end; this is the client
                waiting.pop(0)
                context.report(_status_error(run, str(info.id), err, started_at))
                continue
            waiting.pop(0)
            context.report(_outcome(context, api, run, final, started_at))
    finally:
        for _, info in waiting:  # Ctrl-C: the jobs not collected yet are cancelled, not left running
            api.cancel_job(job_id=str(info.id), namespace=context.settings.namespace)


def collect(context: Context, run: PlannedRun, job_id: str) -> Outcome | None:
    """A job of an earlier ``--no-wait`` sweep: ``None`` while it runs, else its outcome."""
    api = make_api(_token(context.settings))
    try:
        info = api.inspect_job(job_id=job_id, namespace=context.settings.namespace)
    except Exception as err:  # a malformed answer, an unknown job id (an edited sweep.json)
        return _status_error(run, job_id, err, now())
    if _stage(info)[0] not in (*TERMINAL, "UNKNOWN"):
        return None
    return _outcome(context, api, run, info, now())


LAUNCHER = Launcher(
    name="hf-jobs",
    launch=launch,
    section="hf_jobs",
    settings=HfJobsSettings,
    check=check,
    dry_note=dry_note,
    collect=collect,
)
