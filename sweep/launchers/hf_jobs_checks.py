"""The ``hf_jobs:`` values checked when SWEEP.yaml is read: before ``--dry-run`` prints, before any
job is sent. What only the Hub can tell (the flavor, the token's rights) is checked by the
launcher before it sends the first job."""

from __future__ import annotations

import re
from importlib import metadata

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.redact import looks_like_secret

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
"""The units ``HfApi.run_uv_job(timeout=)`` reads (``huggingface_hub._jobs_api``)."""
_TIMEOUT = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,9})?)([smhd]?)")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_PYTHON = re.compile(r"3(\.[0-9]{1,3}){0,2}")


def timeout_seconds(value: object) -> int:
    """``timeout`` as whole seconds, read as huggingface_hub reads it: a number of seconds
    (``3600``) or a number with a unit ``s``, ``m``, ``h``, ``d`` (``90m``, ``1.5h``)."""
    match = _TIMEOUT.fullmatch(str(value).strip()) if isinstance(value, (int, float, str)) else None
    seconds = 0
    if match is not None and not isinstance(value, bool):
        seconds = int(float(match[1]) * UNITS[match[2] or "s"])
    if seconds < 1:
        raise MMSpuBenchError(
            f"timeout {value!r}: expected the seconds (3600) or a number with s, m, h or d "
            "(90m, 1.5h, 1d), at least 1 second"
        )
    return seconds


def check_repo_id(value: str) -> None:
    """``results_repo`` is a Hub repo id (``huggingface_hub.utils.validate_repo_id``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError as err:
        raise MMSpuBenchError(
            f"results_repo {value!r}: not a Hub repo id ({first_line(err, 200)}); expected org/name"
        ) from None


def repo_folder(value: str) -> str:
    """``results_path`` as a folder of the repo: relative, never climbing out (``..``)."""
    parts = value.strip().rstrip("/").split("/")
    if (
        value.strip().startswith("/")
        or "\\" in value
        or any(part in ("", ".", "..") or not part.isprintable() for part in parts)
    ):
        raise MMSpuBenchError(
            f"results_path {value!r}: expected a folder of the repo such as sweeps or runs/2025 "
            "(relative, no '..', '.' or empty parts)"
        )
    return "/".join(parts)


def check_variable(value: str) -> None:
    """``token_env`` is the NAME of a variable (the value itself is never shown)."""
    if not _VARIABLE.fullmatch(value) or looks_like_secret(value):
        raise MMSpuBenchError(
            "token_env: expected the NAME of the environment variable that holds the token (e.g. "
            "HF_TOKEN), got something that is not a variable name (not shown: it may be the token itself)"
        )


def check_extras(value: str) -> None:
    """``extras``: extras the package declares, separated by commas (they go into ``pip install``)."""
    declared = metadata.metadata("mm-spubench").get_all("Provides-Extra") or []
    given = [part.strip() for part in value.split(",")]
    unknown = [part for part in given if part not in declared]
    if unknown:
        raise MMSpuBenchError(
            f"extras {value!r}: {unknown[0]!r} is not an extra of mm-spubench; expected some of "
            f"{', '.join(declared)} separated by commas"
        )


def check_namespace(value: str | None) -> None:
    """``namespace``: a user or organisation name."""
    if value is not None and (not _NAMESPACE.fullmatch(value) or "--" in value or ".." in value):
        raise MMSpuBenchError(f"namespace {value!r}: expected a Hub user or organisation name")


def check_python(value: str | None) -> None:
    """``python``: a Python version such as 3.12."""
    if value is not None and not _PYTHON.fullmatch(value):
        raise MMSpuBenchError(f"python {value!r}: expected a Python version such as 3.12")
