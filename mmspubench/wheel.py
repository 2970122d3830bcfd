"""The package's wheel, built from a checkout with setuptools and checked before it travels.

``space build`` vendors what the wheel ships into a Space repository; a sweep's remote jobs
(HF Jobs) install it. Nothing is written into the checkout (setuptools' intermediate files go to a
work folder), and a wheel that would ship a file from outside the checkout or a secret is refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from mmspubench.errors import MMSpuBenchError

WHEEL_CONFIG = """[build]
build_base = {work}/build
[egg_info]
egg_base = {work}
[bdist_wheel]
bdist_dir = {work}/bdist
"""
"""Where setuptools puts its intermediate files (``DIST_EXTRA_CONFIG``): outside the checkout."""
WHEEL_SCRIPT = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"


def build_wheel(source: Path, work: Path) -> tuple[Path, str]:
    """Build the wheel of the checkout ``source`` with setuptools (nothing written into ``source``).

    Returns the wheel and setuptools' output (its warnings included).
    """
    work.mkdir(parents=True, exist_ok=True)
    config = work / "extra.cfg"
    config.write_text(WHEEL_CONFIG.format(work=work.as_posix()), encoding="utf-8")
    env = {**os.environ, "DIST_EXTRA_CONFIG": str(config), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", WHEEL_SCRIPT, str(work / "wheel")],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
    )
    log = done.stdout + done.stderr
    if done.returncode != 0:
        last = [line for line in log.splitlines() if line.strip()][-1:] or ["no output"]
        raise MMSpuBenchError(
            f"{source}: could not build the package's wheel with {_setuptools_named()} ({last[0].strip()}); "
            f"space build vendors what the wheel ships: {_setuptools_remedy()}"
        )
    wheel = work / "wheel" / done.stdout.strip().splitlines()[-1]
    check_wheel(source, work, wheel)
    return wheel, log


def _setuptools_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("setuptools")
    except PackageNotFoundError:
        return None


def _setuptools_named() -> str:
    found = _setuptools_version()
    return "setuptools" if found is None else f"setuptools {found}"


def _setuptools_remedy() -> str:
    """What helps: installing setuptools where it is missing, upgrading it where it is there (an old
    release cannot build this layout: a plain ``pip install -e .`` keeps whatever the venv had)."""
    if _setuptools_version() is None:
        return "pip install setuptools"
    return "pip install --upgrade setuptools"


SECRET_NAMES: frozenset[str] = frozenset({"hf_token", "token", ".env"})
"""File names a wheel may not ship (with ``*.env``): where a Hub token or keys are kept."""


def _sources(work: Path) -> list[str]:
    """The checkout's files setuptools put in the wheel (its ``SOURCES.txt``), relative paths."""
    listed = next(work.glob("*.egg-info/SOURCES.txt"), None)
    if listed is None:
        raise MMSpuBenchError(f"{work}: setuptools wrote no SOURCES.txt; cannot tell what the wheel ships")
    return [line for line in listed.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_wheel(source: Path, work: Path, wheel: Path) -> None:
    """Refuse a wheel that would ship a file from outside the checkout ``source`` or a secret.

    Setuptools copies what a symbolic link points at, so a declared file (listed in the
    ``SOURCES.txt`` it wrote under ``work``) reached through a link that leaves the checkout is
    refused by name, as is every wheel file named like a token file or holding a token-shaped
    text (``mmspubench.redact.holds_token``): a token left in a data folder
    (``eval/assets/<model>/hf_token``) would travel with every Space and every HF Job.
    """
    from mmspubench.redact import holds_token

    top = source.resolve()
    for rel in _sources(work):
        declared = source / rel
        if declared.is_relative_to(work):  # setuptools' own metadata, written in the work folder
            continue
        for at in [*reversed(Path(rel).parents[:-1]), Path(rel)]:  # a linked folder, or the file
            link = source / at
            if link.is_symlink() and not link.resolve().is_relative_to(top):
                raise MMSpuBenchError(
                    f"{link}: a symbolic link to {link.resolve()}, outside the checkout; the package's "
                    "wheel ships only the checkout's own files: remove the link"
                )
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            base = name.rsplit("/", 1)[-1].lower()
            if base in SECRET_NAMES or base.endswith(".env"):
                raise MMSpuBenchError(
                    f"{source}: the wheel would ship {name}, a file named like a token file; "
                    "keep secrets out of the package folders"
                )
            if holds_token(archive.read(name).decode("latin-1")):
                raise MMSpuBenchError(
                    f"{source}: the wheel would ship {name}, which holds a token-shaped text "
                    "(hf_..., sk-..., ghp_...); keep secrets out of the package folders"
                )
