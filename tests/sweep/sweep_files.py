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


def fake_finished(folder: Path) -> None:
    """A folder the sweep reads as finished (results.json of 0 items, empty samples, a manifest)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text("{}", encoding="utf-8")
    (folder / "samples.jsonl").write_bytes(b"")
    (folder / "results.json").write_text(
        json.dumps({"benchmark": "MM-SpuBench", "dataset": {"n": 0}}), encoding="utf-8"
    )
