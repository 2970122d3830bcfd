"""Every fast path checks itself on a run's first items, and every sample says how it was scored.

Fakes with a fast path whose reference computation disagrees on a chosen score (the figures are
hand-computed from the hand-made dataset: item ``i`` has ``1 + i % 3`` core and ``1 + (i + 1) % 4``
spurious attributes), then the real transformers scorer under a stand-in library regression.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import scorer_check
from mmspubench.eval.protocol import FastPath, ScoreRequest, ScorerTally
from mmspubench.eval.records import SampleResult, ScoreCheck, Scoring

from tests.eval.fakes import FakeModel, run_fake
from tests.helpers.run_folders import eval_run, fake_config

FAKE_PATH = FastPath(name="the fake cache", remedy="--fake-cache off")


class CheckedFake(FakeModel):
    """The fake model with a fast path; ``wrong(request)`` is how far its reference disagrees."""

    def __init__(self, wrong: Any = None, plain_reason: str | None = None) -> None:
        super().__init__()
        self.fast_path = FAKE_PATH
        self.scorer_tally = ScorerTally()
        self.reference_calls: list[int] = []
        self._wrong = wrong or (lambda request: 0.0)
        self._plain_reason = plain_reason

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        if self._plain_reason is not None and any("spurious 4-" in r.context for r in requests):
            self.scorer_tally.add("plain", len(requests), self._plain_reason)
        else:
            self.scorer_tally.add("fast", len(requests))
        return super().score(requests)

    def reference_score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        self.reference_calls.append(len(requests))
        return [s + self._wrong(r) for s, r in zip(FakeModel.score(self, requests), requests, strict=True)]


def _run(tmp_path: Path, model: FakeModel, n: int = 6, **options: Any) -> dict[str, Any] | None:
    config = fake_config(batch_size=3, **{"scorer_check": 2, **options})
    return eval_run(tmp_path / "run", lambda: model, n=n, config=config)


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def test_the_first_items_are_checked_and_recorded(tmp_path: Path) -> None:
    model = CheckedFake(lambda r: 3e-5)  # float noise: inside the tolerance
    results = _run(tmp_path, model)
    assert results is not None
    # Items 0 and 1 are checked (K = 2 here; 1 by default): 1 + 2 and 2 + 3 CGL conditions, generate
    # mode (no letters).
    assert results["model"]["scorer_check"] == {
        "path": "the fake cache",
        "requested": 2,
        "items": 2,
        "conditions": 8,
        "max_abs_diff": pytest.approx(3e-5),
        "tolerance": 1e-4,
    }
    assert model.reference_calls == [3, 5]
    lines = _lines(tmp_path / "run")
    assert [line["scoring"]["check"] is not None for line in lines] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert lines[0]["scoring"] == {
        "scorers": ["fast"],
        "fallback": None,
        "check": {"scores": 3, "max_abs_diff": pytest.approx(3e-5)},
    }
    assert results["model"]["scorer_used"] == "fast" and results["model"]["scorer_samples"] == {"fast": 6}


def test_a_difference_above_the_tolerance_stops_the_run_naming_item_and_condition(tmp_path: Path) -> None:
    model = CheckedFake(lambda r: 0.5 if "spurious 1-2" in r.context else 0.0)
    with pytest.raises(MMSpuBenchError) as caught:
        _run(tmp_path, model)
    message = str(caught.value)
    assert "\n" not in message
    assert "the fake cache disagrees with the plain computation for 'fake' (family fake)" in message
    assert "item '000001', CGL of condition 'spurious 1-2' (spurious)" in message
    assert "(|difference| 0.5 > 0.0001)" in message and "Rerun with --fake-cache off" in message
    assert "transformers" in message  # the versions to report
    # Item 0 passed and was written before item 1 failed; item 1 was not.
    assert [line["id"] for line in _lines(tmp_path / "run")] == ["000000"]


def test_a_failure_on_the_first_item_leaves_no_run_folder(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match="item '000000'"):
        _run(tmp_path, CheckedFake(lambda r: 2e-4))
    assert not (tmp_path / "run").exists()


def test_the_tolerance_is_exclusive_and_non_finite_fails(tmp_path: Path) -> None:
    assert _run(tmp_path / "a", CheckedFake(lambda r: 0.99e-4)) is not None
    with pytest.raises(MMSpuBenchError, match=r"\|difference\| inf"):
        _run(tmp_path / "b", CheckedFake(lambda r: math.inf))
    with pytest.raises(MMSpuBenchError, match=r"\|difference\| inf"):
        _run(tmp_path / "c", CheckedFake(lambda r: math.nan))


def test_only_the_first_k_items_are_checked(tmp_path: Path) -> None:
    """A path wrong on item 3 only goes unseen with K = 2: the check covers what it says it covers."""
    wrong = CheckedFake(lambda r: 1.0 if "core 3-" in r.context else 0.0)
    assert _run(tmp_path / "k2", wrong)["model"]["scorer_check"]["items"] == 2  # type: ignore[index]
    with pytest.raises(MMSpuBenchError, match="item '000003'"):
        _run(tmp_path / "k4", CheckedFake(lambda r: 1.0 if "core 3-" in r.context else 0.0), scorer_check=4)


def test_zero_turns_the_check_off_and_says_so(tmp_path: Path) -> None:
    model = CheckedFake(lambda r: 1.0)
    results = _run(tmp_path, model, scorer_check=0)
    assert results is not None and model.reference_calls == []
    check = results["model"]["scorer_check"]
    assert (check["requested"], check["items"], check["conditions"], check["max_abs_diff"]) == (0, 0, 0, None)
    assert results["config"]["scorer_check"] == 0


def test_logprob_mode_checks_every_option_score(tmp_path: Path) -> None:
    model = CheckedFake(lambda r: 0.01 if r.continuation.strip() == "C" else 0.0)
    with pytest.raises(MMSpuBenchError, match="item '000000', score of option 'C'"):
        _run(tmp_path, model, answer_mode="logprob")
    ok = CheckedFake()
    results = _run(tmp_path / "ok", ok, answer_mode="logprob")
    assert results is not None
    # 4 letters + 3 conditions, then 4 letters + 5 conditions (one call each per item).
    assert results["model"]["scorer_check"]["conditions"] == 16
    assert ok.reference_calls == [7, 9]


def test_a_model_without_a_fast_path_records_no_check(tmp_path: Path) -> None:
    results = run_fake(tmp_path / "run", 4)
    assert results is not None and results["model"]["scorer_check"] is None
    assert all("scoring" not in line for line in _lines(tmp_path / "run"))


def test_samples_scored_plain_in_part_make_the_run_mixed(tmp_path: Path) -> None:
    model = CheckedFake(plain_reason="a request is longer than the window")
    results = _run(tmp_path, model)
    assert results is not None
    # Item 4 sits in the second chunk (items 3-5): that chunk's CGLA call is scored plain.
    assert results["model"]["scorer_used"] == "mixed"
    assert results["model"]["scorer_samples"] == {"fast": 3, "plain": 3}
    assert (
        results["model"]["scorer_fallback_reason"] == "a request is longer than the window (3 of 6 samples)"
    )
    lines = _lines(tmp_path / "run")
    assert lines[4]["scoring"] == {
        "scorers": ["plain"],
        "fallback": "a request is longer than the window",
        "check": None,
    }


def test_a_resumed_run_sums_the_checks_of_both_parts(tmp_path: Path) -> None:
    assert _run(tmp_path, CheckedFake()) is not None
    run = tmp_path / "run"
    lines = (run / "samples.jsonl").read_text().splitlines(keepends=True)
    (run / "samples.jsonl").write_text("".join(lines[:3]))
    (run / "results.json").unlink()
    results = _run(tmp_path, CheckedFake())
    assert results is not None
    # Items 0, 1 checked by the first part, items 3, 4 (the resumed part's first two) by the second.
    assert [line["scoring"]["check"] is not None for line in _lines(run)] == [
        True,
        True,
        False,
        True,
        True,
        False,
    ]
    assert results["model"]["scorer_check"]["items"] == 4


def test_the_scoring_record_reads_back_and_refuses_forgeries() -> None:
    scoring = Scoring(("fast", "plain"), "why", ScoreCheck(7, 1.5e-6))
    assert Scoring.from_json(json.loads(json.dumps(scoring.to_json()))) == scoring
    bad = [
        ({"scorers": ["quick"], "fallback": None, "check": None}, "scorers"),
        ({"scorers": ["plain", "fast"], "fallback": None, "check": None}, "sorted"),
        ({"scorers": [], "fallback": None, "check": None}, "scorers"),
        ({"scorers": None, "fallback": 3, "check": None}, "fallback"),
        ({"scorers": None, "fallback": None, "check": {"scores": True, "max_abs_diff": 0}}, "scores"),
        ({"scorers": None, "fallback": None, "check": {"scores": 1, "max_abs_diff": -1}}, "negative"),
        ({"scorers": None, "fallback": None, "check": {"scores": 1, "max_abs_diff": "0"}}, "finite"),
        ({"scorers": None, "fallback": None}, "missing key 'check'"),
        ({"scorers": None, "fallback": None, "check": None, "extra": 1}, "unknown key"),
    ]
    for obj, words in bad:
        with pytest.raises((TypeError, ValueError), match=words):
            Scoring.from_json(obj)


def test_summary_by_hand() -> None:
    def sample(
        scorers: tuple[str, ...] | None, fallback: str | None, check: ScoreCheck | None
    ) -> SampleResult:
        return SampleResult(
            id="x",
            types=(),
            answer="A",
            prediction=None,
            correct=None,
            raw_output=None,
            option_scores=None,
            class_name="c",
            conditions=(),
            cgla_min=None,
            cgla_acc=None,
            scoring=Scoring(scorers, fallback, check),
        )

    samples = [
        sample(("fast",), None, ScoreCheck(4, 2e-6)),
        sample(("fast", "plain"), "text-only", ScoreCheck(6, 5e-6)),
        sample(("fast", "plain"), "text-only", None),
        sample(("plain",), "window", None),
    ]
    out = scorer_check.summary(samples, {"scorer_check": {"path": "p", "requested": 2}})
    assert out == {
        "scorer_used": "mixed",
        "scorer_samples": {"fast": 1, "fast+plain": 2, "plain": 1},
        "scorer_fallback_reason": "text-only (2 of 4 samples); window (1 of 4 samples)",
        "scorer_check": {
            "path": "p",
            "requested": 2,
            "items": 2,
            "conditions": 10,
            "max_abs_diff": 5e-6,
            "tolerance": 1e-4,
        },
    }
    assert scorer_check.summary(samples[:1], {})["scorer_used"] == "fast"
    assert scorer_check.summary(samples[3:], {})["scorer_used"] == "plain"


def test_one_item_by_default(tmp_path: Path) -> None:
    from mmspubench.eval.config import RunConfig

    assert RunConfig().scorer_check == scorer_check.DEFAULT_ITEMS == 1
    results = run_fake(tmp_path / "run", 3)  # no fast path: nothing checked whatever K is
    assert results is not None and results["config"]["scorer_check"] == 1
