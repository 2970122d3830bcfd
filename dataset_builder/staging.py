"""Staging folders of ``build`` and the checks that keep ``--out`` away from the input.

A build writes into a hidden sibling of ``--out`` named ``.NAME.building-PID-XXXX`` and renames it
into place at the end. Clean-up on failure, Ctrl-C and SIGTERM happens in the builder's
``finally``; a run killed harder (SIGKILL, power loss) leaves its folder behind, so every build
first removes the staging folders of earlier runs of this tool whose process is gone: only folders
matching that exact name pattern, owned by this user, not symlinks, with a dead owning process.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from mmspubench.errors import MMSpuBenchError

STAGING_PATTERN = re.compile(r"^\.(?P<name>.+)\.building-(?P<pid>[1-9]\d{0,9})-[A-Za-z0-9_]{6,}$")
"""Names of the staging folders this tool creates (``tempfile.mkdtemp`` suffix last)."""


def check_out_vs_source(source: Path, out: Path, flag: str = "--source") -> None:
    """Refuse an ``--out`` whose replacement would delete or change the input folder ``flag`` names."""
    try:
        src, dst = source.resolve(), out.resolve()
    except (OSError, RuntimeError) as err:
        raise MMSpuBenchError(f"{out}: cannot resolve --out or {flag} ({err})") from None
    if src == dst:
        raise MMSpuBenchError(f"{out}: --out is the {flag} folder; writing there would delete the input")
    if src.is_relative_to(dst):
        raise MMSpuBenchError(f"{out}: --out contains {flag} {source}; replacing it would delete the input")
    if dst.is_relative_to(src):
        raise MMSpuBenchError(f"{out}: --out lies inside {flag} {source}; choose a folder outside it")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or an odd pid): not ours to judge, keep its folder
    return True


def stale_staging_folders(parent: Path) -> list[Path]:
    """Staging folders in ``parent`` left by dead runs of this tool (by this user)."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    stale = []
    for entry in entries:
        match = STAGING_PATTERN.match(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.stat(follow_symlinks=False).st_uid != os.getuid():
            continue
        if not _process_alive(int(match.group("pid"))):
            stale.append(Path(entry.path))
    return stale


def make_staging(out: Path) -> Path:
    """Remove stale staging folders beside ``out``, then create this run's own."""
    for folder in stale_staging_folders(out.parent):
        shutil.rmtree(folder, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.building-{os.getpid()}-", dir=out.parent))
