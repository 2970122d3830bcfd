"""One published dataset (the Hub fixture, offline) shared by a module's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dataset_builder import hub_fixtures as hub


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The raw release published as ``hub.REPO_ID`` at ``hub.COMMIT`` in a temporary Hub cache."""
    from huggingface_hub import constants

    root = tmp_path_factory.mktemp("published")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(constants, "HF_HUB_CACHE", str(root / "hub-cache"))
        mp.setenv("MMSPUBENCH_CACHE", str(root / "mmspubench-cache"))
        mp.setenv("HF_HUB_OFFLINE", "1")
        for name in (
            "MMSPUBENCH_PUBLISHED_SPLIT",
            "MMSPUBENCH_PUBLISHED_REVISION",
            "MMSPUBENCH_PUBLISHED_DATASET",
        ):
            mp.delenv(name, raising=False)
        hub.published(root)
        yield root
