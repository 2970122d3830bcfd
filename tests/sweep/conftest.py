"""The fake eval of the sweep tests (``fake_eval.py``) in place of ``mmspubench eval``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from mmspubench.sweep import engine, process

ROOT_OF_REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_eval(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Runs start ``tests/sweep/fake_eval.py`` (configs from ``tmp_path/configs.json``: write the sweep
    with ``sweep_files.write_fake_sweep(tmp_path)``); no report (fake folders hold no figures)."""
    monkeypatch.setenv("FAKE_EVAL_CONFIGS", str(tmp_path / "configs.json"))

    def command(argv: Sequence[str]) -> list[str]:
        return [sys.executable, "-m", "tests.sweep.fake_eval", *argv]

    monkeypatch.setattr(process, "eval_command", command)
    monkeypatch.setenv("PYTHONPATH", str(ROOT_OF_REPO))
    monkeypatch.setattr(engine.finish, "write_report", lambda *a: None)
    monkeypatch.setattr(engine.finish, "write_compares", lambda *a: [])
