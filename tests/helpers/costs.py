"""What a run of ours records beside each answer that another harness's log does not carry."""

from __future__ import annotations

from typing import Any

COST_KEYS = ("tokens", "seconds")
"""A generated answer's token counts and request time (samples.jsonl): an ingested run has none."""


def without_costs(value: Any) -> Any:
    """``value`` (a samples.jsonl record or part of one) with every answer's cost fields left out."""
    if isinstance(value, dict):
        return {k: without_costs(v) for k, v in value.items() if k not in COST_KEYS}
    if isinstance(value, list):
        return [without_costs(v) for v in value]
    return value


def without_times(value: Any) -> Any:
    """``value`` with every answer's request time left out: the one field of a sample that differs
    between two runs of the same items (token counts are the same)."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value
