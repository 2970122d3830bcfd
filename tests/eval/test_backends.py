"""results.json records the engine; the transformers default is unchanged by the engine options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import transformers
from mmspubench.eval.cli import main


def test_transformers_run_records_its_backend(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["eval", "--limit", "2", "--out", str(out), "--no-progress", "--scorer", "plain"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["backend"] == {
        "name": "transformers",
        "version": transformers.__version__,
        "settings": {"scorer": "plain", "batch_size": 8, "device": "cpu"},
    }
    assert results["config"]["batch_size"] == 8 and results["accuracy_only"] is False


def test_vllm_refuses_several_launched_processes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert main(["eval", "--backend", "vllm", "--out", "unused"]) == 2
    assert "--backend vllm runs in one process" in capsys.readouterr().err
