"""Test-wide settings: nothing reaches a hub, every cache lives in a temporary folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# huggingface_hub reads these when it is first imported (its ``constants``), before any fixture
# runs: set them at collection, so a plain `pytest` never waits on a network retry loop.
for _name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ.setdefault(_name, "1")


@pytest.fixture(autouse=True)
def _isolated_hf_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    home = tmp_path_factory.getbasetemp() / "hf_home"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    yield


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder shared by the whole session for expensive generated fixtures."""
    return Path(tmp_path_factory.mktemp("session_cache"))


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
