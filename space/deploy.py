"""``mmspubench space build`` and ``space push``: a complete Space repository, and its upload.

The folder holds ``app.py`` (the entry point, with this build's settings as defaults that the
Space's variables override), ``README.md`` (the Space header: sdk gradio at the installed
version, ``app_file``, the suggested ZeroGPU hardware, tags), ``requirements.txt`` (the runtime
dependencies pinned to the versions installed here; nothing of this project, which is vendored as
``mmspubench/``) and the vendored package. ``push`` uploads exactly that folder in one commit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

from mmspubench.errors import MMSpuBenchError
from mmspubench.space.vendor import runtime_requirements, vendor_package

SUGGESTED_HARDWARE = "zero-a10g"
"""ZeroGPU: live runs take a GPU for the length of one decorated call (``space/zerogpu.py``)."""
MARKER_NAME = ".mmspubench-space-build"
"""Written into every build: the files it wrote. ``--overwrite`` replaces only a folder holding
this marker and nothing but the files it lists (never a folder the user filled, whatever its names)."""
MARKER_WRITER = "mmspubench space build"
REQUIREMENTS_HEADER = (
    "# Runtime dependencies of the MM-SpuBench Space, pinned to the versions it is tested with.\n"
    "# The project's own code is vendored beside app.py (mmspubench/); nothing here needs it.\n"
    "# torch: install the CPU build first where there is no GPU (its version satisfies the pin).\n"
)


@dataclass(frozen=True, slots=True)
class SpaceSettings:
    """The Space's settings, written as defaults of its variables (a Space variable overrides each)."""

    dataset: str | None = None
    """``MMSPUBENCH_DATASET``: Hub dataset id or folder to explore (default: bundled synthetic release)."""
    results: str | None = None
    """``MMSPUBENCH_RESULTS``: results dataset of runs for the leaderboard and CGLA view."""
    models: str | None = None
    """``MMSPUBENCH_SPACE_MODELS``: comma-separated Hub ids for live runs (default: two SmolVLM sizes)."""
    revision: str | None = None
    """``MMSPUBENCH_PUBLISHED_REVISION``: the dataset commit that submissions must match."""

    def variables(self) -> dict[str, str]:
        """The variables this build sets, by name (unset ones keep the app's defaults)."""
        pairs = {
            "MMSPUBENCH_DATASET": self.dataset,
            "MMSPUBENCH_RESULTS": self.results,
            "MMSPUBENCH_SPACE_MODELS": self.models,
            "MMSPUBENCH_PUBLISHED_REVISION": self.revision,
        }
        return {k: v for k, v in pairs.items() if v}


_SAFE_VALUE = re.compile(r"[A-Za-z0-9_./,:@-]{1,400}")


def _check_settings(settings: SpaceSettings) -> None:
    for name, value in settings.variables().items():
        if not _SAFE_VALUE.fullmatch(value):
            raise MMSpuBenchError(
                f"setting {name}: {value!r} holds characters outside letters, digits and _./,:@-"
            )


def app_source(settings: SpaceSettings) -> str:
    """``app.py``: the build's settings as ``os.environ.setdefault`` lines, then the vendored app.

    The docstring speaks of this build's defaults only when it has some.
    """
    variables = settings.variables()
    lines = "".join(f"os.environ.setdefault({k!r}, {v!r})\n" for k, v in variables.items())
    defaults = (
        "Settings are the Space's variables; the defaults below are this build's (a variable of the\n"
        "same name overrides each)."
        if variables
        else "Settings are the Space's variables; this build sets none, so each keeps the app's own\n"
        "default (see README.md)."
    )
    return (
        '"""Entry point of the MM-SpuBench Space (written by `mmspubench space build`).\n\n'
        f"{defaults}\n"
        "Port: GRADIO_SERVER_PORT, else PORT, else 7860; address: GRADIO_SERVER_NAME (Gradio's\n"
        "default 127.0.0.1; a Space sets 0.0.0.0). Ctrl-C or SIGTERM stops it with one line.\n"
        "The package is vendored beside this file (mmspubench/).\n"
        '"""\n\n'
        f"{'import os' + chr(10) * 2 + lines + chr(10) if lines else ''}"
        "from mmspubench.space.app import main\n\n"
        'if __name__ == "__main__":\n'
        "    main()\n"
    )


def readme_source(settings: SpaceSettings) -> str:
    """The Space card: the package's own ``space/README.md`` with this build's header and settings."""
    text = resources.files("mmspubench.space").joinpath("README.md").read_text(encoding="utf-8")
    gradio = metadata.version("gradio")
    text = re.sub(r"(?m)^sdk_version: .*$", f"sdk_version: {gradio}", text, count=1)
    text = re.sub(r"(?m)^(app_file: .*)$", rf"\1\nsuggested_hardware: {SUGGESTED_HARDWARE}", text, count=1)
    rows = "".join(f"| `{k}` | `{v}` |\n" for k, v in settings.variables().items())
    table = f"| variable | value |\n|---|---|\n{rows}" if rows else "none: every variable has its default.\n"
    return (
        f"{text.rstrip()}\n\n## Settings of this build\n\nDefaults written into `app.py`; a Space "
        f"variable of the same name overrides each.\n\n{table}\nThe server listens on `GRADIO_SERVER_PORT`, "
        "else `PORT`, else 7860, at `GRADIO_SERVER_NAME` (a Space sets both); Ctrl-C or SIGTERM stops "
        "it with one line.\n"
    )


def requirements_source() -> str:
    """``requirements.txt``: base and ``space`` dependencies at the installed versions."""
    return REQUIREMENTS_HEADER + "".join(f"{r.line}\n" for r in runtime_requirements())


def _built_files(out: Path) -> set[str] | None:
    """The files a previous build of ``out`` wrote, from its marker; ``None`` without a valid one."""
    marker = out / MARKER_NAME
    if marker.is_symlink() or not marker.is_file() or marker.stat().st_size > 1_000_000:
        return None
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    files = doc.get("files") if isinstance(doc, dict) and doc.get("written_by") == MARKER_WRITER else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return set(files)


def _check_overwrite(out: Path) -> None:
    """Refuse (one line) to replace ``out`` unless a build wrote it and nothing was added since."""
    built = _built_files(out)
    if built is None:
        raise MMSpuBenchError(
            f"{out}: --overwrite replaces only a folder space build wrote (it has no {MARKER_NAME}); "
            "choose an empty or new folder"
        )
    present = sorted(
        p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_symlink() or not p.is_dir()
    )
    foreign = [p for p in present if p not in built and p != MARKER_NAME]
    if foreign:
        raise MMSpuBenchError(
            f"{out}: holds {foreign[0]!r}, which space build did not write; --overwrite replaces only "
            "an unchanged build (move the file away or choose another folder)"
        )


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse (one line) an ``--out`` inside the package's sources, a file, or a folder not to replace."""
    from mmspubench.outputs import refuse_overlap
    from mmspubench.space.vendor import package_folders

    refuse_overlap("--out", out, package_folders().values(), folder=True)
    if out.is_symlink():
        raise MMSpuBenchError(f"{out}: --out is a symbolic link; name the folder itself")
    if out.exists() and not out.is_dir():
        raise MMSpuBenchError(f"{out}: --out is a file; expected a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise MMSpuBenchError(f"{out}: folder is not empty; pass --overwrite to replace a previous build")
        _check_overwrite(out)


def _write_marker(staging: Path) -> None:
    files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    doc = {"written_by": MARKER_WRITER, "files": files}
    (staging / MARKER_NAME).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def _folder_mode() -> int:
    """The mode a new folder gets under the current umask (0755 under 022)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o777 & ~mask


def build_space(out: Path, settings: SpaceSettings, overwrite: bool = False) -> list[Path]:
    """Write the Space repository to ``out`` (all or nothing); the files to upload, relative to ``out``.

    The marker (:data:`MARKER_NAME`) is written too but is not part of the upload.
    """
    _check_settings(settings)
    check_out(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        os.chmod(staging, _folder_mode())  # as any folder the user makes, not mkdtemp's private 0700
        vendor_package(staging)
        (staging / "app.py").write_text(app_source(settings), encoding="utf-8")
        (staging / "README.md").write_text(readme_source(settings), encoding="utf-8")
        (staging / "requirements.txt").write_text(requirements_source(), encoding="utf-8")
        _write_marker(staging)
        if out.exists():
            shutil.rmtree(out)
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and p.name != MARKER_NAME)


def push_space(folder: Path, files: list[Path], repo_id: str, dry_run: bool, token: str | None = None) -> str:
    """Upload ``files`` of ``folder`` to the Space ``repo_id`` in one commit; or print them (dry run)."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise MMSpuBenchError(f"--repo-id {repo_id!r} is not a valid repo id ({err})") from None
    operations = [
        CommitOperationAdd(path_in_repo=p.as_posix(), path_or_fileobj=str(folder / p)) for p in files
    ]
    if dry_run:
        for op in operations:
            print(f"add {op.path_in_repo}")
        return f"dry run: {len(operations)} files for space {repo_id}, nothing sent"
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
        info = api.create_commit(
            repo_id=repo_id,
            repo_type="space",
            operations=operations,
            commit_message="Deploy the MM-SpuBench Space (mmspubench space push)",
        )
    except (HfHubHTTPError, OSError, ValueError) as err:
        raise MMSpuBenchError(f"could not push the Space {repo_id!r}: {err}") from None
    return str(info.commit_url)
