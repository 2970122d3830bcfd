"""Hand-made fixtures in the documented formats: a tiny benchmark dataset and results runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
from mmspubench.dataset_builder.schema import FEATURES
from PIL import Image

ITEMS: list[dict[str, Any]] = [
    {
        "id": "000000",
        "question": "What is the object on the sand?",
        "options": ["a camel", "a dog", "a cow", "a bird"],
        "answer": 1,
        "class_name": "dog",
        "core_attributes": ["four legs", "furry snout"],
        "spurious_attributes": ["sand background", "bright sunlight"],
        "spurious_types": [0, 6],
        "source": 5,
        "colour": (200, 180, 120),
    },
    {
        "id": "000001",
        "question": "Which object is shown upside down?",
        "options": ["a cup", "a bowl", "a hat", "a bell"],
        "answer": 0,
        "class_name": "cup",
        "core_attributes": ["handle"],
        "spurious_attributes": ["inverted orientation"],
        "spurious_types": [5],
        "source": 5,
        "colour": (30, 60, 200),
    },
    {
        "id": "000002",
        "question": "What is the striped object?",
        "options": ["a zebra", "a horse", "a tiger", "a fish"],
        "answer": 3,
        "class_name": "fish",
        "core_attributes": ["fins", "scales", "tail"],
        "spurious_attributes": ["striped texture"],
        "spurious_types": [1],
        "source": 0,
        "colour": (10, 200, 30),
    },
]


def make_dataset() -> datasets.Dataset:
    """Three items with the schema's features and solid-colour pictures."""
    columns: dict[str, list[Any]] = {name: [] for name in FEATURES}
    for item in ITEMS:
        for name in FEATURES:
            if name == "image":
                columns[name].append(Image.new("RGB", (32, 24), item["colour"]))
            else:
                columns[name].append(item[name])
    return datasets.Dataset.from_dict(columns, features=FEATURES)


def sample_record(item_id: str = "000000") -> dict[str, Any]:
    """A samples.jsonl record with two core and three spurious conditions."""
    conditions = [
        ("four legs", "core", -3.0),
        ("furry snout", "core", -2.5),
        ("sand background", "spurious", -4.0),
        ("bright sunlight", "spurious", -1.5),
        ("desert", "spurious", -2.0),
    ]
    return {
        "id": item_id,
        "types": ["background", "lighting_shadows"],
        "answer": "B",
        "prediction": "A",
        "correct": False,
        "raw_output": "A",
        "option_scores": None,
        "class_name": "dog",
        "conditions": [
            {
                "attribute": attr,
                "kind": kind,
                "prompt": f"<system>Describe.</system><user><image>The object has {attr}.</user><assistant>It is a",
                "continuation": " dog",
                "cgl": cgl,
            }
            for attr, kind, cgl in conditions
        ],
        "cgla_min": -1.0,
        "cgla_acc": False,
    }


def results_json(
    model_id: str, by_type: dict[str, float], overall: float, cgla_acc: float, n: int
) -> dict[str, Any]:
    """A results.json in the documented layout."""
    return {
        "schema_version": 1,
        "benchmark": "MM-SpuBench",
        "dataset": {"id": "mmbench/MM-SpuBench", "revision": "abc123def4567890", "split": "test", "n": n},
        "model": {"id": model_id, "revision": None, "dtype": "float32", "adapter": "hf"},
        "config": {"answer_mode": "logprob"},
        "accuracy": {
            "overall": overall,
            "average": sum(by_type.values()) / len(by_type),
            "by_type": by_type,
            "ci95": [overall - 5, overall + 5],
            "unparsed": 0,
        },
        "cgla": {"acc": cgla_acc, "by_type": {}, "mean_cgla_min": -0.1},
        "created_at": "2026-11-30T08:00:00+00:00",
    }


def write_run(root: Path, name: str, results: dict[str, Any]) -> Path:
    """Write ``results`` as ``root/name/results.json``; returns the run folder."""
    run = root / name
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return run
