"""The launcher contract: how a sweep's runs reach a machine, and how their outcome comes back.

A launcher is one :class:`Launcher` value in its own module plus one line in ``registry.py``. Its
settings (a SWEEP.yaml section such as ``slurm:``) are a frozen dataclass of ``option()`` fields,
checked with the file. ``launch`` starts the runs it is given and reports each :class:`Outcome`
as it comes (the sweep writes it to ``sweep.json`` at once); with ``--no-wait`` an outcome may be
``submitted`` with a job id, which a later sweep gives to ``collect``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config_checks import check_field
from mmspubench.options import choices_of
from mmspubench.sweep.spec import PlannedRun, Sweep


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one attempt of one run."""

    name: str
    """The run's folder name."""
    state: str
    """``finished``, ``failed`` or ``submitted`` (``--no-wait``)."""
    started_at: str
    """UTC start of the attempt."""
    finished_at: str | None = None
    """UTC end of the attempt (``None`` while submitted)."""
    error: str | None = None
    """One line: why it failed."""
    job_id: str | None = None
    """The scheduler's job id (Slurm, HF Jobs)."""
    where: str | None = None
    """Where it ran: the GPU of a local run, the job id."""
    permanent: bool = False
    """A failure another attempt cannot change (eval refused its input: exit status 2); not retried
    within this sweep call."""


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """The sweep command's options a launcher reads."""

    max_parallel: int | None
    """Local runs at once (``None``: one, or one per GPU of ``gpus``)."""
    gpus: tuple[str, ...]
    """Local GPUs, one run each (``CUDA_VISIBLE_DEVICES``)."""
    no_wait: bool
    """Submit and return; a later sweep collects."""


@dataclass(frozen=True, slots=True)
class Context:
    """What a launcher gets: the sweep, its options, its settings and where to report."""

    sweep: Sweep
    options: LaunchOptions
    settings: Any
    """The launcher's settings dataclass (``None`` for a launcher without one)."""
    report: Callable[[Outcome], None]
    """Records an outcome in ``sweep.json``."""
    started: Callable[[PlannedRun, str], None] = lambda run, note: None
    """Says a run started, e.g. ``running on GPU 1`` (a progress line on the terminal)."""

    def work_dir(self, name: str) -> Path:
        """A folder of the launcher's own under the root (``.<name>``)."""
        folder = self.sweep.root / f".{name}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder


@dataclass(frozen=True, slots=True)
class Launcher:
    """One way of running a sweep's runs."""

    name: str
    """The ``--launcher`` value."""
    launch: Callable[[Context, Sequence[PlannedRun]], None]
    """Run (or submit) the runs; report each outcome through ``context.report``."""
    section: str | None = None
    """SWEEP.yaml key of its settings."""
    settings: type | None = None
    """Frozen dataclass of ``option()`` fields: the section's keys."""
    check: Callable[[Context], None] | None = None
    """What must hold before anything is sent (packages, hardware); skipped by ``--dry-run``."""
    dry_note: Callable[[Sweep, Any], str | None] | None = None
    """What ``--dry-run`` prints after the plan, from the sweep and the settings (e.g. the jobs it
    would send, and that the flavor was not checked); offline."""
    collect: Callable[[Context, PlannedRun, str], Outcome | None] | None = None
    """The outcome of a submitted job (``None``: still running)."""


def settings_of(launcher: Launcher, section: Mapping[str, Any], where: str) -> Any:
    """The launcher's settings from its SWEEP.yaml section, every key and value checked."""
    if launcher.settings is None:
        return None
    fields = {f.name: f for f in dataclasses.fields(launcher.settings)}
    hints = typing.get_type_hints(launcher.settings)
    for key, value in section.items():
        if key not in fields:
            raise MMSpuBenchError(f"{where}: unknown key {key!r}; expected some of {', '.join(fields)}")
        try:
            check_field(fields[key], hints[key], value)
        except MMSpuBenchError as err:
            raise MMSpuBenchError(f"{where}: {key}: {err}") from None
        choices = choices_of(fields[key])
        if choices is not None and value not in choices:
            raise MMSpuBenchError(f"{where}: {key}: {value!r}: expected one of {', '.join(choices)}")
    missing = [n for n, f in fields.items() if f.default is dataclasses.MISSING and n not in section]
    if missing:
        raise MMSpuBenchError(f"{where}: key {missing[0]!r} is required")
    try:
        return launcher.settings(**section)  # its __post_init__ checks what one field cannot tell
    except MMSpuBenchError as err:
        raise MMSpuBenchError(f"{where}: {err}") from None
