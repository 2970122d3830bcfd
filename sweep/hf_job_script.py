"""The script a Hugging Face Job runs for one sweep run (shipped with the job; stdlib only until installed).

    uv run hf_job_script.py WHEEL EXTRAS RESULTS_REPO PATH_IN_REPO SECRET_NAME -- EVAL_ARGS...

1. installs this package from the shipped wheel (the sweep's own build, same version) with EXTRAS;
2. runs ``mmspubench eval EVAL_ARGS --out <tmp>/<run>``;
3. on success uploads the run folder to the dataset repo RESULTS_REPO at PATH_IN_REPO, with the
   token of the secret SECRET_NAME (read from the environment, never printed).
Its exit status is eval's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def _install(wheel: str, extras: str) -> None:
    spec = f"mm-spubench[{extras}] @ {Path(wheel).resolve().as_uri()}" if extras else wheel
    command = ["uv", "pip", "install", "--python", sys.executable, spec]
    if subprocess.run(command, check=False).returncode != 0:
        sys.exit(f"hf job: could not install {Path(wheel).name}")


def _upload(folder: Path, repo: str, path_in_repo: str, secret: str) -> None:
    from huggingface_hub import HfApi

    HfApi(token=os.environ.get(secret)).upload_folder(
        repo_id=repo,
        repo_type="dataset",
        folder_path=str(folder),
        path_in_repo=path_in_repo,
        commit_message=f"mmspubench sweep: {folder.name}",
    )


def main(argv: list[str]) -> int:
    """Install, evaluate, upload; returns eval's exit status."""
    if "--" not in argv or argv.index("--") != 5:
        sys.exit("usage: hf_job_script.py WHEEL EXTRAS RESULTS_REPO PATH_IN_REPO SECRET_NAME -- EVAL_ARGS...")
    wheel, extras, repo, path_in_repo, secret = argv[:5]
    eval_args = argv[6:]
    _install(wheel, extras)
    out = Path(tempfile.mkdtemp(prefix="mmspubench-job-")) / Path(path_in_repo).name
    code = subprocess.run(
        [sys.executable, "-m", "mmspubench.cli", "eval", *eval_args, "--out", str(out)], check=False
    ).returncode
    if code == 0:
        _upload(out, repo, path_in_repo, secret)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
