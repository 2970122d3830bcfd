"""eval's closing line names what the run measured: the views asked, CGLA's time only when CGLA ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmspubench.eval.commands import _summary

from tests.test_readme import _shown_output


def _results(metrics: list[str], answer_mode: str = "generate") -> dict[str, Any]:
    results: dict[str, Any] = {
        "config": {"metrics": metrics, "answer_mode": answer_mode},
        "accuracy": {"overall": 28.888, "ci95": {"overall": [20.0, 37.777]}, "n": 90, "unparsed": 10},
        "model": {"scorer_used": "fast", "scorer_fallback_reason": None, "scorer_check": {"items": 1}},
        "timing": {"cgla_seconds": 26.2, "total_seconds": 48.6},
    }
    if "cgla" in metrics:
        results["cgla"] = {
            "acc": 97.777,
            "ci95": {"acc": [94.444, 100.0]},
            "n": 90,
            "mean_cgla_min": 3.567,
            "core_reduction": "best",
        }
    if "circular" in metrics:
        results["circular"] = {"accuracy": 12.222}
    if "blind" in metrics:
        results["blind"] = {"accuracy": 30.0, "gain": -1.111}
    if "calibration" in metrics:
        results["calibration"] = {"brier": 0.71234, "ece": 0.1534}
    return results


def test_the_default_line_is_the_readme_s() -> None:
    line = _summary(_results(["accuracy", "cgla"]), Path("runs/default")).splitlines()[0]
    assert line == _shown_output()[0].replace("CGLA scoring Ts, total Ts", "CGLA scoring 26.2s, total 48.6s")


def test_accuracy_alone_prints_no_cgla_time_and_no_scorer() -> None:
    line = _summary(_results(["accuracy"]), Path("runs/x")).splitlines()[0]
    assert line == "accuracy 28.89% (95% CI 20.00-37.78; n=90, unparsed 10); total 48.6s"


def test_the_line_names_every_view_measured() -> None:
    metrics = ["accuracy", "cgla", "circular", "blind", "calibration"]
    line = _summary(_results(metrics, "logprob"), Path("runs/x")).splitlines()[0]
    assert (
        "; circular 12.22%; blind 30.00% (gain -1.11 pp); Brier 0.712, ECE 0.153; scorer fast (checked against plain on 1 item); "
        in line
    )
    assert line.endswith("; CGLA scoring 26.2s, total 48.6s")


def test_logprob_mode_without_cgla_names_the_scorer_not_the_cgla_time() -> None:
    line = _summary(_results(["accuracy", "circular"], "logprob"), Path("runs/x")).splitlines()[0]
    assert line.endswith("; circular 12.22%; scorer fast (checked against plain on 1 item); total 48.6s")


def test_the_scorer_note_says_what_ran_and_how_it_was_checked() -> None:
    results = _results(["accuracy", "cgla"])
    results["model"] = {
        "scorer_used": "mixed",
        "scorer_fallback_reason": "a request is longer than the window (3 of 90 samples)",
        "scorer_check": {"items": 2},
    }
    line = _summary(results, Path("runs/x")).splitlines()[0]
    assert (
        "; scorer mixed (checked against plain on 2 items; fast not used: a request is longer than the "
        "window (3 of 90 samples)); " in line
    )
    results["model"] = {"scorer_used": "plain", "scorer_fallback_reason": None, "scorer_check": None}
    assert "; scorer plain; " in _summary(results, Path("runs/x"))


def test_the_line_names_the_interventions_measured() -> None:
    results = _results(["accuracy", "interventions"])
    results["interventions"] = {
        "names": ["grayscale", "cf:cue-aligned"],
        "by_intervention": {
            "grayscale": {"accuracy": {"overall": 25.556}, "change": {"gain": -3.333}},
            "cf:cue-aligned": {"accuracy": {"overall": 61.0}, "change": {"gain": 32.111}},
        },
    }
    line = _summary(results, Path("runs/x")).splitlines()[0]
    assert line == (
        "accuracy 28.89% (95% CI 20.00-37.78; n=90, unparsed 10); under interventions: "
        "grayscale 25.56% (-3.33 pp), cf:cue-aligned 61.00% (+32.11 pp); total 48.6s"
    )
