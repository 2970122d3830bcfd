"""SWEEP.yaml files and fake run folders for the sweep tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from mmspubench.eval.bundled import BALANCED_MODEL, BIASED_MODEL

TWO_MODELS = [
    {"name": "biased", "model": str(BIASED_MODEL)},
    {"name": "balanced", "model": str(BALANCED_MODEL)},
]


def write_sweep(folder: Path, **overrides: Any) -> Path:
    """A SWEEP.yaml of the two bundled models x (standard, core-focus), 2 items, logprob answers."""
    doc: dict[str, Any] = {
        "root": "runs",
        "variants": ["standard", "core-focus"],
        "options": {"limit": 2, "answer_mode": "logprob", "batch_size": 2, "progress": False},
        "models": TWO_MODELS,
    }
    doc.update(overrides)
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def fake_finished(folder: Path, config: dict[str, Any]) -> None:
    """A folder the sweep reads as finished (results.json of 0 items with ``config``, empty samples, a manifest)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text("{}", encoding="utf-8")
    (folder / "samples.jsonl").write_bytes(b"")
    results = {"benchmark": "MM-SpuBench", "dataset": {"n": 0, "split_n": 0}, "config": config}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")


def planned_configs(path: Path) -> dict[str, dict[str, Any]]:
    """Each planned run's results.json ``config``, by run folder name."""
    from mmspubench.sweep.launchers.registry import sections
    from mmspubench.sweep.spec import load_sweep

    return {run.name: run.config.to_json() for run in load_sweep(path, sections()).runs}


def write_fake_sweep(folder: Path, **overrides: Any) -> Path:
    """The sweep file, and beside it the planned configs the fake eval records (``FAKE_EVAL_CONFIGS``)."""
    path = write_sweep(folder, **overrides)
    (folder / "configs.json").write_text(json.dumps(planned_configs(path)), encoding="utf-8")
    return path
