"""A run folder that came back from a remote job, checked as ``submit`` checks a submission.

Every figure of results.json (accuracy, CGLA, the confound views) is recomputed from samples.jsonl
and every sample's run stamp checked, by ``submit``'s own checks (``check_run_samples``,
``check_run_figures``: each sample consistent with itself and the schema, values finite and in
range, ids once each); the run must also be the one planned: the same recorded
identity options and model (a plan without ``limit`` is the whole split), as many items as the plan
asks and as many samples as results.json says.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.config import RunConfig
from mmspubench.eval.results import (
    MANIFEST_NAME,
    RESULTS_NAME,
    SAMPLES_NAME,
    read_finished_samples,
)
from mmspubench.eval.results_file import Dataset, Results, read_results_file
from mmspubench.eval.submit.submission import check_run_figures, check_run_samples
from mmspubench.sweep.spec import PlannedRun

_SHA = re.compile(r"[0-9a-f]{7,64}")


_RESOLVED = ("max_new_tokens", "prompts")
"""Options a plan may leave to the run (``None``, ``{}``): eval records what it chose (the model's
default answer length, the variant's templates: those follow from the variants checked here)."""


def _bundled(recorded: object) -> bool:
    """Whether the recorded dataset path is the bundled release (a plan without ``dataset``)."""
    from mmspubench.dataset_builder.defaults import default_release_name

    path = Path(str(recorded or ""))
    return path.name == "repo" and path.parent.name == default_release_name()


def _check_identity(run: PlannedRun, config: RunConfig, where: str) -> None:
    """Every recorded identity option is the plan's: a ``None`` of the plan (no ``limit``: the whole
    split) is compared too, but for the options eval resolves (``_RESOLVED``, the bundled dataset)."""
    for f in dataclasses.fields(RunConfig):
        if not f.metadata.get("identity"):
            continue
        planned, recorded = getattr(run.config, f.name), getattr(config, f.name)
        if f.name in _RESOLVED and not planned:
            continue
        if f.name == "dataset" and planned is None and _bundled(recorded):
            continue
        if recorded != planned:
            shown = list(recorded) if isinstance(recorded, tuple) else recorded
            want = list(planned) if isinstance(planned, tuple) else planned
            raise MMSpuBenchError(f"{where}: field 'config.{f.name}': {shown!r} is not the planned {want!r}")


def _check_size(run: PlannedRun, results: Results, where: str) -> None:
    """As many items as the plan asks: the whole split, or ``limit`` of it."""
    dataset = results.dataset or Dataset()
    n, split_n = dataset.get("n"), dataset.split_n
    if split_n is None:
        raise MMSpuBenchError(
            f"{where}: field 'dataset.split_n': expected the split's size, got {dataset.get('split_n')!r}"
        )
    limit = run.config.limit
    expected = split_n if limit is None else min(limit, split_n)
    if n != expected:
        asked = "the whole split" if limit is None else f"--limit {limit}"
        raise MMSpuBenchError(
            f"{where}: field 'dataset.n': {n!r} items, the plan asks {expected} ({asked} of {split_n})"
        )


def _check_revision(run: PlannedRun, results: Results, where: str) -> None:
    """A planned dataset commit (a sha) is the one the run read."""
    planned = run.config.dataset_revision
    recorded = (results.dataset or Dataset()).revision or ""
    if planned and _SHA.fullmatch(planned) and not recorded.startswith(planned):
        raise MMSpuBenchError(
            f"{where}: field 'dataset.revision': {recorded!r} is not the planned {planned!r}"
        )


def other_run(folder: Path, run: PlannedRun) -> str | None:
    """Why the finished run in ``folder`` is not the planned one (other options, size, dataset), or ``None``."""
    where = str(folder / RESULTS_NAME)
    try:
        results = read_results_file(folder / RESULTS_NAME)
        if results.config is None:
            raise KeyError("config")
        config = RunConfig.from_json(results.config)
        _check_identity(run, config, where)
        _check_revision(run, results, where)
        _check_size(run, results, where)
    except (MMSpuBenchError, KeyError, ValueError, TypeError) as err:
        return first_line(err, 300)
    return None


def verify_run(folder: Path, run: PlannedRun) -> None:
    """Refuse (one line) a fetched run folder whose figures do not follow from its samples."""
    where = str(folder / RESULTS_NAME)
    if not (folder / MANIFEST_NAME).is_file():
        raise MMSpuBenchError(f"{folder}: no {MANIFEST_NAME}; not an eval run folder")
    results = read_results_file(folder / RESULTS_NAME)
    samples = tuple(read_finished_samples(folder / SAMPLES_NAME))
    config = results.run_config(where)
    _check_identity(run, config, where)
    _check_revision(run, results, where)
    _check_size(run, results, where)
    check_run_samples(results, samples, config, folder / RESULTS_NAME)
    check_run_figures(results, samples, config, folder / RESULTS_NAME)
