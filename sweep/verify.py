"""A run folder that came back from a remote job, checked as ``submit`` checks a submission.

Every figure of results.json (accuracy, CGLA, the confound views) is recomputed from samples.jsonl
and every sample's run stamp checked, by ``submit``'s own checks (``check_run_samples``,
``check_run_figures``: each sample consistent with itself and the schema, values finite and in
range, ids once each); the run must also be the one planned: the same recorded
identity options and model, and as many samples as results.json says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.config import RunConfig
from mmspubench.eval.results import (
    MANIFEST_NAME,
    RESULTS_NAME,
    SAMPLES_NAME,
    read_finished_samples,
    read_results,
)
from mmspubench.space.submit import check_run_figures, check_run_samples
from mmspubench.sweep.spec import PlannedRun

_SHA = re.compile(r"[0-9a-f]{7,64}")


def _check_identity(run: PlannedRun, config: RunConfig, where: str) -> None:
    """The recorded identity options are the plan's (those the plan leaves to the run aside)."""
    planned = run.config.identity()
    recorded = config.identity()
    for key, value in planned.items():
        if key != "prompts" and value is not None and recorded.get(key) != value:
            raise MMSpuBenchError(
                f"{where}: field 'config.{key}': {recorded.get(key)!r} is not the planned {value!r}"
            )


def _check_revision(run: PlannedRun, results: Mapping[str, Any], where: str) -> None:
    """A planned dataset commit (a sha) is the one the run read."""
    planned = run.config.dataset_revision
    recorded = str((results.get("dataset") or {}).get("revision") or "")
    if planned and _SHA.fullmatch(planned) and not recorded.startswith(planned):
        raise MMSpuBenchError(
            f"{where}: field 'dataset.revision': {recorded!r} is not the planned {planned!r}"
        )


def other_run(folder: Path, run: PlannedRun) -> str | None:
    """Why the finished run in ``folder`` is not the planned one (other options, dataset commit), or ``None``."""
    where = str(folder / RESULTS_NAME)
    try:
        results = read_results(folder / RESULTS_NAME)
        config = RunConfig.from_json(results["config"])
        _check_identity(run, config, where)
        _check_revision(run, results, where)
    except (MMSpuBenchError, KeyError, ValueError, TypeError) as err:
        return first_line(err, 300)
    return None


def verify_run(folder: Path, run: PlannedRun) -> None:
    """Refuse (one line) a fetched run folder whose figures do not follow from its samples."""
    where = str(folder / RESULTS_NAME)
    if not (folder / MANIFEST_NAME).is_file():
        raise MMSpuBenchError(f"{folder}: no {MANIFEST_NAME}; not an eval run folder")
    results = read_results(folder / RESULTS_NAME)
    samples = tuple(read_finished_samples(folder / SAMPLES_NAME))
    try:
        config = RunConfig.from_json(results["config"])
    except (KeyError, ValueError, TypeError) as err:
        raise MMSpuBenchError(f"{where}: field 'config' is malformed ({err})") from None
    _check_identity(run, config, where)
    _check_revision(run, results, where)
    check_run_samples(results, samples, config, folder / RESULTS_NAME)
    check_run_figures(results, samples, config, folder / RESULTS_NAME)
