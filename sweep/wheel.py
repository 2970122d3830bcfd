"""The wheel a remote job installs: built from this checkout, at this package's version."""

from __future__ import annotations

import functools
import shutil
import tempfile
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


def wheel_name() -> str:
    """The file name of the wheel a job installs: this package's version."""
    return f"mm_spubench-{package_version()}-py3-none-any.whl"


@functools.cache
def build(out: Path) -> Path:
    """Build the checkout's wheel into ``out`` (once per process: the source as it is now); its
    version must be the running package's. Built as ``space build`` builds it
    (``mmspubench.wheel.build_wheel``): setuptools' intermediate files go to a temporary folder, never
    into the checkout."""
    from mmspubench.wheel import build_wheel

    name = wheel_name()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="mmspubench-wheel-") as work:
        try:
            built, _ = build_wheel(checkout(), Path(work))
        except MMSpuBenchError as err:
            raise MMSpuBenchError(f"could not build the wheel {name} of {checkout()}: {err}") from None
        if built.name != name:
            raise MMSpuBenchError(
                f"could not build the wheel {name} of {checkout()} (built: {built.name}; the checkout is "
                "another version than the running package: reinstall it)"
            )
        shutil.move(built, out / name)
    return out / name
