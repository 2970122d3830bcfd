"""The bundled default release: a small synthetic set generated on first use and cached.

The README's commands, the tests, ``mmspubench eval`` without ``--dataset`` and the Space all use
:func:`default_dataset_dir`. The cache folder name carries the generator version and settings, so
a changed generator regenerates instead of serving stale items. Generation is concurrency-safe:
each process builds into a temporary folder and renames it into place; a process that loses the
race uses the folder the winner put there.

This module imports nothing heavy at module level: the command line reads its constants.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

GENERATOR_VERSION = "3"
"""Bumped whenever the synthetic generator's output changes."""
DEFAULT_N = 90
"""Items in the default release: about ten per spurious type."""
DEFAULT_SEED = 0
DEFAULT_IMAGE_SIZE = 224
DEFAULT_TRAIN_CORRELATION = 0.9
"""Class-cue correlation of the training mode when neither a correlation nor a cue is given."""
MODES: tuple[str, ...] = ("benchmark", "train")
CUES: tuple[str, ...] = ("aligned", "broken", "random")
CACHE_ENV = "MMSPUBENCH_CACHE"
"""Environment variable naming the cache root (default ``$HF_HOME/mmspubench``)."""


def cache_root() -> Path:
    """``$MMSPUBENCH_CACHE``, else ``$HF_HOME/mmspubench``, else ``~/.cache/huggingface/mmspubench``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "mmspubench"
    return Path.home() / ".cache" / "huggingface" / "mmspubench"


def default_release_name() -> str:
    """Cache folder name of the default release: generator version and settings."""
    return f"synthetic-v{GENERATOR_VERSION}-n{DEFAULT_N}-seed{DEFAULT_SEED}-px{DEFAULT_IMAGE_SIZE}"


def materialise(target: Path, make: Callable[[Path], object]) -> Path:
    """Return ``target``, creating it with ``make(tmp_path)`` and an atomic rename when missing."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        make(work / "out")
        try:
            os.rename(work / "out", target)
        except OSError:
            # Another process renamed its copy first (rename onto a non-empty folder fails):
            # theirs is complete, so use it.
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def default_raw_release() -> Path:
    """The default synthetic raw release (``annotation.json`` + ``data/images/``), generated once."""
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    def make(out: Path) -> None:
        write_release(out, generate_items(DEFAULT_N, seed=DEFAULT_SEED, image_size=DEFAULT_IMAGE_SIZE))

    return materialise(cache_root() / default_release_name() / "raw", make)


def default_dataset_dir() -> Path:
    """The default release built into the Hub layout (``README.md``, ``data/*.parquet``, ``eval.yaml``).

    ``load_dataset(str(default_dataset_dir()), split="test")`` loads it.
    """
    from mmspubench.dataset_builder.builder import build_repo

    raw = default_raw_release()
    return materialise(raw.parent / "repo", lambda out: build_repo(raw, out))
