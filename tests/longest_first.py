"""A pytest plugin for the slow suite in CI (``-p tests.longest_first``): the longest tests first.

pytest-xdist hands the tests to its workers in collection order, a few at a time, and a worker
that finishes asks for more; a long test collected last keeps one worker busy after the other has
run out of work. Sorting the known long ones to the front (longest first) lets the short ones fill
in around them, so both workers end together. The order changes which worker runs what, never what
runs: every worker sorts the same collection the same way, as pytest-xdist requires.
"""

from __future__ import annotations

import pytest

LONGEST_FIRST = (
    "tests/eval/test_vllm_equality.py",  # one group: one engine, one server, the reference runs
    "tests/eval/test_vllm_thinking.py",  # one engine and one transformers load, two budgets each
    "tests/space/test_deploy_fresh.py",  # a fresh venv with torch and the Space's requirements
    "tests/test_docs_site.py",  # four real runs of the bundled models for the docs tables
    "tests/eval/test_engines_bench.py",
    "tests/sweep/test_sweep_end_to_end.py",
    "tests/eval/test_intervention_controls.py",
    "tests/space/test_load_space.py",
    "tests/curate/test_vllm.py",
    "tests/eval/test_confound_controls.py",
    "tests/sweep/test_sweep_hf_jobs.py",
    "tests/integrations/",
)
"""Test id prefixes, longest first (``--durations`` of the slow suite on a 2-core machine); a test
takes the rank of the first prefix it starts with, the rest keep their order after them."""


def _rank(nodeid: str) -> int:
    return next(
        (i for i, prefix in enumerate(LONGEST_FIRST) if nodeid.startswith(prefix)), len(LONGEST_FIRST)
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _rank(item.nodeid))  # a stable sort: ties keep their order
