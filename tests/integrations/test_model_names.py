"""`markup.is_hub_model`: the one rule for whether a run's model is linked and checked as a Hub repo."""

from __future__ import annotations

from typing import Any

import pytest
from mmspubench.markup import is_hub_model


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ({"id": "org/name"}, True),  # a run of mmspubench eval: judged by its id
        ({"id": "HuggingFaceTB/SmolVLM-256M-Instruct"}, True),
        ({"id": "name-only"}, False),
        ({"id": "/abs/path/model"}, False),
        ({"id": "a/b/c"}, False),
        ({"id": "org/na--me"}, False),
        ({"id": 5}, False),
        ({}, False),
        ({"id": "openai/gpt-4o-mini", "hub_repo": None}, False),  # ingest of Inspect's API model
        ({"id": "mockllm/model", "hub_repo": None}, False),
        ({"id": "org/name", "hub_repo": "org/name"}, True),  # ingest of a weights provider
        ({"id": "org/name", "hub_repo": "org/other"}, False),  # an edited file: no link either way
    ],
)
def test_is_hub_model(model: dict[str, Any], expected: bool) -> None:
    assert is_hub_model(model) is expected


def test_the_leaderboard_links_exactly_what_the_rule_says() -> None:
    from mmspubench.space.leaderboard import run_entry

    base = {"benchmark": "MM-SpuBench", "accuracy": {"overall": 50.0, "average": 50.0, "by_type": {}}}
    linked = run_entry({**base, "model": {"id": "org/name"}}, "r")
    plain = run_entry({**base, "model": {"id": "openai/gpt-4o-mini", "hub_repo": None}}, "r")
    assert linked.row["Model"].startswith("[org/name](")
    assert plain.row["Model"] == "openai/gpt-4o-mini"
