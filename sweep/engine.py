"""A sweep from start to end: validate, plan, lock the root, launch, retry, collect, report.

``sweep.json`` is written after every outcome, so a killed sweep loses nothing it learnt; the run
folders are eval's own, so a rerun skips the finished ones (not touched: nothing is written into
them) and resumes the partial ones through eval's resume.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mmspubench.errors import MMSpuBenchError
from mmspubench.redact import clean
from mmspubench.sweep import dry_run, finish
from mmspubench.sweep.launchers import registry
from mmspubench.sweep.launchers.plugin import Context, Launcher, LaunchOptions, Outcome, settings_of
from mmspubench.sweep.spec import PlannedRun, Sweep, load_sweep
from mmspubench.sweep.state import Status, locked
from mmspubench.sweep.verify import other_run


@dataclass(frozen=True, slots=True)
class SweepRequest:
    """What the ``sweep`` command was asked (``sweep/cli.py:SweepOptions`` read back)."""

    sweep: str
    launcher: str
    dry_run: bool
    retries: int
    plot: bool
    options: LaunchOptions


def load(request: SweepRequest) -> tuple[Sweep, Launcher, object]:
    """The validated sweep, its launcher and the launcher's settings (every section checked)."""
    launcher = registry.get_launcher(request.launcher)
    sweep = load_sweep(request.sweep, registry.sections())
    if launcher.section is not None and launcher.section not in sweep.sections:
        raise MMSpuBenchError(
            f"{sweep.path}: --launcher {launcher.name} needs a {launcher.section!r} section"
        )
    settings = None
    for other in registry.REGISTRY.values():
        if other.section is None or (other.section not in sweep.sections and other is not launcher):
            continue
        value = settings_of(other, sweep.sections.get(other.section, {}), f"{sweep.path}: {other.section}")
        if other is launcher:
            settings = value
    if launcher.section is not None and launcher.section not in sweep.sections:
        raise MMSpuBenchError(
            f"{sweep.path}: --launcher {launcher.name} needs a {launcher.section!r} section"
        )
    return sweep, launcher, settings


class _Progress:
    """The sweep's terminal lines: ``[k/N] run: what happened`` (k: the run's place in the plan)."""

    def __init__(self, sweep: Sweep) -> None:
        self.place = {run.name: k for k, run in enumerate(sweep.runs, 1)}
        self.total = len(sweep.runs)

    def say(self, name: str, text: str) -> None:
        print(clean(f"[{self.place.get(name, '?')}/{self.total}] {name}: {text}"), flush=True)

    def started(self, run: PlannedRun, note: str) -> None:
        self.say(run.name, note)


def _record(status: Status, progress: _Progress, gave_up: set[str]) -> Callable[[Outcome], None]:
    def report(outcome: Outcome) -> None:
        attempt = {k: v for k, v in dataclasses.asdict(outcome).items() if k != "name"}
        update = {"state": outcome.state, "error": outcome.error, "job_id": outcome.job_id}
        status.record(outcome.name, update, attempt)
        if outcome.state == "failed":
            if outcome.permanent:  # bad input: another attempt would fail the same way
                gave_up.add(outcome.name)
            note = " (not retried: another attempt cannot change it)" if outcome.permanent else ""
            progress.say(outcome.name, f"failed: {outcome.error}{note}")
        elif outcome.state == "submitted":
            progress.say(outcome.name, f"submitted as job {outcome.job_id}")
        else:
            progress.say(outcome.name, outcome.state)

    return report


def _collect(context: Context, launcher: Launcher, status: Status, runs: Sequence[PlannedRun]) -> None:
    """Each job an earlier ``--no-wait`` call recorded as submitted (its folder may be finished already)."""
    for run in runs:
        entry = status.runs.get(run.name, {})
        if entry.get("state") != "submitted" or launcher.collect is None:
            continue
        outcome = launcher.collect(context, run, str(entry.get("job_id")))
        if outcome is not None and outcome.state == "failed" and status.state(run) == "finished":
            # the folder is the truth: the run finished though its job left no result to read
            outcome = dataclasses.replace(outcome, state="finished", error=None, permanent=False)
        if outcome is not None:
            context.report(outcome)


def _pending(status: Status, runs: Sequence[PlannedRun], gave_up: set[str]) -> list[PlannedRun]:
    return [r for r in runs if status.state(r) in ("new", "partial", "failed") and r.name not in gave_up]


def _check_flags(request: SweepRequest) -> None:
    """Options of one launcher given with another are refused, not ignored."""
    local = request.launcher == "local"
    if not local and (request.options.gpus or request.options.max_parallel is not None):
        raise MMSpuBenchError(
            f"--gpus and --max-parallel are options of --launcher local, not {request.launcher}"
        )
    if local and request.options.no_wait:
        raise MMSpuBenchError(
            "--no-wait is an option of --launcher slurm and hf-jobs (local runs are waited for)"
        )


def run_sweep(request: SweepRequest) -> int:
    """The sweep command: 0 when every run finished (or was submitted), 2 when some failed."""
    _check_flags(request)
    sweep, launcher, settings = load(request)
    if request.dry_run:
        return dry_run.show(sweep, launcher, settings)
    if request.plot:
        from mmspubench.eval.analysis.plots import require_matplotlib

        require_matplotlib()
    with locked(sweep.root):
        status = Status(sweep.root, launcher.name)
        progress, gave_up = _Progress(sweep), set[str]()
        context = Context(
            sweep, request.options, settings, _record(status, progress, gave_up), progress.started
        )
        try:
            _launch(context, launcher, status, request, gave_up)
        finally:
            status.sync(sweep.runs)  # a run that finished as Ctrl-C arrived is recorded as finished
        return _finish(sweep, status, request)


def _launch(
    context: Context, launcher: Launcher, status: Status, request: SweepRequest, gave_up: set[str]
) -> None:
    """Collect the jobs of an earlier call, say what is skipped, then launch and retry the rest."""
    runs = context.sweep.runs
    if launcher.check is not None:
        launcher.check(context)
    collected = {name for name, entry in status.runs.items() if entry.get("state") == "submitted"}
    _collect(context, launcher, status, runs)
    status.sync(runs)
    for run in runs:
        if status.state(run) == "finished" and run.name not in collected:  # a collected job said so
            print(clean(f"[{runs.index(run) + 1}/{len(runs)}] {run.name}: finished already, skipped"))
    for _ in range(1 + request.retries):
        todo = _pending(status, runs, gave_up)
        if not todo:
            break
        launcher.launch(context, todo)
        if request.options.no_wait:
            break


def _finish(sweep: Sweep, status: Status, request: SweepRequest) -> int:
    states = {r.name: status.state(r) for r in sweep.runs}
    done = [r for r in sweep.runs if states[r.name] == "finished"]
    report = finish.write_report(sweep.root, done, request.plot)
    compares = finish.write_compares(sweep.root, done, request.plot)
    counts = {s: list(states.values()).count(s) for s in dict.fromkeys(states.values())}
    print(", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(states)} runs; status: {status.path}")
    if report is not None:
        print(
            f"report: {report}"
            + (f"; {len(compares)} comparisons in {sweep.root / finish.COMPARE_DIR}" if compares else "")
        )
    for run in sweep.runs:
        error = status.runs.get(run.name, {}).get("error")
        if states[run.name] in ("failed", "partial") and error:
            print(clean(f"{run.name}: {states[run.name]}: {error}"))
        elif states[run.name] == "other":
            reason = other_run(run.folder, run)
            print(
                clean(
                    f"{run.name}: holds another run, left as it is ({reason}); move it away or use another root"
                )
            )
    return 2 if {"failed", "partial", "other"} & set(states.values()) else 0
