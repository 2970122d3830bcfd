"""Runs of the bundled models made once per test session, however many xdist workers ask for them.

A module fixture is computed again in every worker that runs one of the module's tests, and the same
bundled run is made by several modules: :func:`bundled_run` makes each one once, under a file lock in
the folder every worker of the session shares, and hands out its folder. Read it; never change it
(``shutil.copytree`` it first). The runs share one ``HF_HOME`` (where the bundled release is laid
out, whose path a run records), so that two of them name the same dataset folder; one lock for all,
as two runs would lay the release out there at once.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    """The session's folder: the parent of the workers' own (``popen-gwN``) under xdist."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def bundled_run(factory: pytest.TempPathFactory, name: str, **options: Any) -> Path:
    """The folder of ``mmspubench.evaluate(out=..., progress=False, **options)``, made once per
    session under ``name`` (one name per set of options: the caller keeps them apart)."""
    import mmspubench

    root = _shared_root(factory) / "shared-runs"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.options.json"
    wanted = json.dumps(options, sort_keys=True, default=str)
    with FileLock(str(root / "runs.lock")):
        if done.exists():
            assert done.read_text() == wanted, f"shared run {name!r} asked with other options"
            return folder
        shutil.rmtree(folder, ignore_errors=True)  # a worker that died while making it
        home = root / "hf_home"
        with pytest.MonkeyPatch.context() as env:
            for variable, value in (
                ("HF_HOME", str(home)),
                ("HF_HUB_OFFLINE", "1"),
                ("HF_DATASETS_OFFLINE", "1"),
            ):
                env.setenv(variable, value)
            assert mmspubench.evaluate(out=folder, progress=False, **options) is not None
        done.write_text(wanted)
    return folder


def shared_folder(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``build`` fills, made once per session for every xdist worker (under a lock of its
    own: another shared folder may be made at the same time). Read it; never change it."""
    root = _shared_root(factory) / "shared-folders"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that died while making it
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
