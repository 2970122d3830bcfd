"""Session-wide fixtures of the curation tests (built once, offline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .fixtures import build_tiny_clip, independent_ranks, make_class_tree


@pytest.fixture(scope="session")
def tiny_clip(session_cache: Path) -> Path:
    folder = session_cache / "tiny-clip"
    if not (folder / "config.json").is_file():
        build_tiny_clip(folder)
    return folder


@pytest.fixture(scope="session")
def image_tree(session_cache: Path) -> Path:
    """8 classes x 6 pictures."""
    root = session_cache / "tree"
    if not root.is_dir():
        make_class_tree(root, 6)
    return root


@pytest.fixture(scope="session")
def tree_ranks(tiny_clip: Path, image_tree: Path) -> dict[str, dict[str, object]]:
    return independent_ranks(tiny_clip, image_tree)


@pytest.fixture
def artifacts_dir(tmp_path: Path) -> Path:
    """Where screenshots go: ``$MMSPUBENCH_TEST_ARTIFACTS`` when set (CI keeps it), else a temp folder."""
    import os

    folder = Path(os.environ.get("MMSPUBENCH_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
