"""bench/intervention_cost.py on the tiny profile: its table, its token counts, one transform per
item and intervention (the figures of docs/benchmarks.md come from the realistic profile)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval import interventions

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import intervention_cost  # noqa: E402


def test_tiny_profile_rows_tokens_and_one_transform_per_item_and_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[str, str]] = []

    def counting(name: str, function: Any) -> Any:
        def run(image: Any) -> Any:
            made.append((name, interventions.pixel_digest(image)))
            return function(image)

        return run

    for name, entry in list(interventions.INTERVENTIONS.items()):
        monkeypatch.setitem(
            interventions.INTERVENTIONS, name, replace(entry, function=counting(name, entry.function))
        )
    rows = intervention_cost.bench(_args(items=3, items_per_call=2), tmp_path)
    printed = capsys.readouterr().out
    assert [r.k for r in rows] == list(intervention_cost.KS)
    vanilla = rows[0].tokens
    # Each intervention is one more image pass and the same text: exactly (1 + k) the tokens.
    assert vanilla > 0 and [r.tokens for r in rows] == [(1 + r.k) * vanilla for r in rows]
    lines = [line for line in printed.splitlines() if line.startswith("| ") and "x |" in line]
    assert len(lines) == len(rows) and lines[0].startswith("| none (vanilla) |")
    assert "grayscale, blur, equalize, noise |" in lines[-1] and "5.5x" in lines[-1]
    # warm-up: 1 item x 4 names; then the cache is emptied before each workload: 3 items x k names
    assert len(made) == 4 + 3 * sum(intervention_cost.KS)
    timed = made[4:]
    assert len(set(timed[-12:])) == 12  # the k = 4 workload: each (name, image) made once


def _args(**more: Any) -> Any:
    import argparse

    base = {
        "profile": "tiny",
        "items": 3,
        "items_per_call": 2,
        "batch_size": 8,
        "answer_mode": "logprob",
        "cgla": True,
        "device": "cpu",
        "dtype": "float32",
        "threads": 1,
        "rounds": 1,
        "workdir": None,
    }
    return argparse.Namespace(**{**base, **more})
