"""The wheel a remote job installs: built from this checkout, at this package's version."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import package_version


def checkout() -> Path:
    """The source tree this package runs from (the folder holding pyproject.toml)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        raise MMSpuBenchError(
            f"{root}: not a source checkout (no pyproject.toml); --launcher hf-jobs ships a wheel built from one"
        )
    return root


@functools.cache
def build(out: Path) -> Path:
    """Build the checkout's wheel into ``out`` (once per process: the source as it is now); its
    version must be the running package's."""
    version = package_version()
    name = f"mm_spubench-{version}-py3-none-any.whl"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(out),
        str(checkout()),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not (out / name).is_file():
        built = sorted(p.name for p in out.glob("*.whl"))
        raise MMSpuBenchError(
            f"could not build the wheel {name} of {checkout()} (built: {built or 'none'}; pip: "
            f"{(done.stderr.strip().splitlines() or ['no output'])[-1][:200]})"
        )
    return out / name
