"""A recomputed figure must equal the recorded one in kind as well as value: a count written as
JSON ``true`` for ``1`` (``True == 1`` in Python) or ``1.0`` is refused by ``submit``, the
Space's Submit tab, the leaderboard's check and a sweep's verification, which all compare
through ``eval.submit.submission.compare_aggregates``. A fraction written as a whole JSON integer (``50``
for ``50.0``, as JavaScript or jq print it) is the same number and is taken."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.records import Answer, SampleResult
from mmspubench.eval.submit.submission import compare_aggregates
from mmspubench.space import handlers

from tests.eval.submit.test_submit import REVISION, _submit_dry_run, published_split
from tests.eval.submit.test_submit_forgery import _upload
from tests.eval.submit.test_submit_interventions import _only_grayscale

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests

CASES: list[tuple[Any, Any, bool]] = [
    # (recorded, recomputed, taken)
    (1, 1, True),
    (True, True, True),
    (False, False, True),
    (50.0, 50.0, True),
    (50, 50.0, True),  # one JSON number, printed without its ".0" by some writers
    (-0.0, 0.0, True),
    (None, None, True),
    ("Col.", "Col.", True),
    (True, 1, False),  # the forgery: True == 1 in Python
    (False, 0, False),
    (1, True, False),
    (True, 1.0, False),
    (1.0, 1, False),  # a count is written as an integer
    (20.0, 20, False),
    (None, 0, False),
    (0, None, False),
    ("1", 1, False),
    ([1], 1, False),
    (10**400, 1.0, False),  # beyond a float: refused, not an OverflowError
    (float("nan"), 1.0, False),
]


@pytest.mark.parametrize(
    ("recorded", "recomputed", "taken"), CASES, ids=[f"{c[0]!r:.12}-{c[1]!r:.12}" for c in CASES]
)
def test_a_figure_equals_in_kind_and_value(recorded: Any, recomputed: Any, taken: bool) -> None:
    if taken:
        compare_aggregates({"x": recorded}, {"x": recomputed}, "s", "results.json")
        return
    with pytest.raises(MMSpuBenchError, match=r"^results\.json: field 's\.x': submitted value"):
        compare_aggregates({"x": recorded}, {"x": recomputed}, "s", "results.json")


def _refused(capsys: pytest.CaptureFixture[str], results_path: Path, out: Path, *needles: str) -> None:
    """``submit --dry-run`` refuses in one line (the progress bar of the split's first read aside)."""
    assert _submit_dry_run(results_path, out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    for needle in needles:
        assert needle in err, err


def _one_flip(sample: SampleResult) -> SampleResult:
    """Every item answers under grayscale as published, but item 2 (right, A), which answers C:
    the change counts one item right only without the intervention."""
    assert sample.interventions
    entry = sample.interventions[0]
    reply = Answer(sample.prediction, sample.correct is True, sample.raw_output, None)
    if sample.id == "000002":
        reply = Answer("C", False, "C", None)
    return replace(sample, interventions=(replace(entry, reply=reply),))


def _edit_results(results_path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    results = json.loads(results_path.read_text())
    edit(results)
    results_path.write_text(json.dumps(results))


def _change(results: dict[str, Any]) -> dict[str, Any]:
    change: dict[str, Any] = results["interventions"]["by_intervention"]["grayscale"]["change"]
    return change


FIELD = "interventions.by_intervention.grayscale.change"


@pytest.mark.parametrize(("key", "value"), [("only_vanilla", True), ("only_intervened", False), ("n", 20.0)])
def test_a_count_of_another_kind_is_refused_by_submit_and_the_submit_tab(
    key: str,
    value: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    results_path = _only_grayscale(tmp_path / "run", "generate", _one_flip)
    change = _change(json.loads(results_path.read_text()))
    assert (change["only_vanilla"], change["only_intervened"], change["n"]) == (1, 0, 20)
    assert change[key] == value  # the same value in Python, another kind in JSON
    _edit_results(results_path, lambda r: _change(r).update({key: value}))
    _refused(capsys, results_path, tmp_path / "out", f"field '{FIELD}.{key}'", "disagrees")
    with pytest.raises(MMSpuBenchError, match=rf"field '{FIELD}\.{key}'"):
        _upload(results_path, monkeypatch)
    verdict, yaml_text = handlers.submit_verdict(
        str(results_path), str(results_path.parent / "samples.jsonl"), "org/model"
    )
    assert verdict.startswith("**Not valid.**") and yaml_text == ""


def test_the_leaderboard_check_refuses_a_count_written_as_true(tmp_path: Path) -> None:
    from mmspubench.space.hub_leaderboard import check_run

    results_path = _only_grayscale(tmp_path / "run", "generate", _one_flip)
    check_run(results_path.parent)
    _edit_results(results_path, lambda r: _change(r).update(only_vanilla=True))
    with pytest.raises(MMSpuBenchError, match=rf"field '{FIELD}\.only_vanilla'"):
        check_run(results_path.parent)


def test_a_whole_fraction_written_as_an_integer_still_submits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results_path = _only_grayscale(tmp_path / "run", "generate", _one_flip)
    assert _change(json.loads(results_path.read_text()))["gain"] == -5.0
    _edit_results(results_path, lambda r: _change(r).update(gain=-5))
    assert _submit_dry_run(results_path, tmp_path / "out") == 0
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    assert _upload(results_path, monkeypatch)[0].startswith("**Valid.**")
