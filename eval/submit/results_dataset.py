"""``submit --results-repo ORG/RESULTS``: a validated run into the Space's results dataset.

``.eval_results`` entries carry one figure per task; CGLA and the per-type figures reach the
Space only through the results dataset. After the same validation as the model-repo entries,
the run's ``results.json`` and ``samples.jsonl`` go, unchanged, under
``runs/<model>/<revision-or-time>/`` in one pull request (``--dry-run DIR``: written under DIR).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results_file import Results
from mmspubench.eval.submit.submission import Submission

_SAFE_REVISION = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,63}")
"""A model revision usable as one path segment (commit shas, tags, branch names without ``/``)."""


def run_folder(submission: Submission, results: Results) -> str:
    """``runs/<model>/<revision-or-time>``: the model revision the run used, else its UTC creation time."""
    revision = (results.model.revision if results.model is not None else None) or ""
    if not _SAFE_REVISION.fullmatch(revision) or revision in (".", ".."):
        created = results.created_at or ""
        try:
            when = datetime.fromisoformat(created)
            when = when.astimezone(timezone.utc) if when.tzinfo else when
            revision = when.strftime("%Y%m%dT%H%M%SZ")
        except ValueError:
            raise MMSpuBenchError(
                "results.json: field 'created_at' is not an ISO time; cannot name the run"
            ) from None
    return f"runs/{submission.model_repo}/{revision}"


def results_files(submission: Submission, results_path: Path) -> dict[str, bytes]:
    """Path in the results dataset -> the bytes of the run file validated by ``validate_submission``."""
    import json

    from mmspubench.eval.results import SAMPLES_NAME

    raw = results_path.read_bytes()
    folder = run_folder(submission, Results.from_json(json.loads(raw), results_path))
    return {
        f"{folder}/results.json": raw,
        f"{folder}/{SAMPLES_NAME}": (results_path.parent / SAMPLES_NAME).read_bytes(),
    }


def write_results_dry_run(files: dict[str, bytes], out_dir: Path) -> list[Path]:
    """Write the files the results-dataset pull request would add under ``out_dir``."""
    from mmspubench.eval.results import write_bytes_atomic

    if out_dir.exists() and not out_dir.is_dir():
        raise MMSpuBenchError(f"{out_dir}: --dry-run is a file; expected a folder (created if missing)")
    written = []
    for path, data in files.items():
        write_bytes_atomic(out_dir / path, [data])
        written.append(out_dir / path)
    return written


def open_results_pull_request(
    submission: Submission, files: dict[str, bytes], results_repo: str, token: str | None = None
) -> str:
    """Open a pull request adding ``files`` to the results dataset ``results_repo``; its URL."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id
    from mmspubench.eval.submit.hub_pr import open_hub_pull_request

    try:
        validate_repo_id(results_repo)
    except HFValidationError as err:
        raise MMSpuBenchError(f"--results-repo {results_repo!r} is not a valid repo id ({err})") from None
    return open_hub_pull_request(
        results_repo,
        "dataset",
        files,
        f"Add MM-SpuBench run of {submission.model_repo}",
        f"Adds results.json and samples.jsonl of {submission.model_repo} on {submission.dataset_id}@"
        f"{submission.dataset_revision[:12]} ({submission.n} items), validated and recomputed by "
        "`mmspubench submit`.",
        token,
    )
