"""The leaderboard's merge of the results dataset and the Hub's leaderboard, with a stubbed HfApi."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub.hf_api import DatasetLeaderboardEntry
from mmspubench.space import hub_leaderboard
from mmspubench.space.leaderboard import load_entries

from tests.eval.submit.test_submit import make_run


def _entry(model: str, value: float, verified: bool, **extra: Any) -> DatasetLeaderboardEntry:
    """The type huggingface_hub returns, built from the API's JSON as the library does."""
    author = {"type": "user", "name": "someone", "avatarUrl": "", "fullname": "Someone"}
    data = {"rank": 1, "modelId": model, "value": value, "filename": ".eval_results/mm-spubench.yaml"}
    return DatasetLeaderboardEntry(**data, verified=verified, author=author, **extra)


class StubApi:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def get_dataset_leaderboard(self, repo_id: str) -> Any:
        self.asked.append(repo_id)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    make_run(tmp_path / "runs" / "a-old", model_id="org/a")
    make_run(tmp_path / "runs" / "a-new", model_id="org/a")
    path = tmp_path / "runs" / "a-new" / "results.json"
    data = json.loads(path.read_text())
    data["created_at"] = "2999-01-01T00:00:00+00:00"  # the later run of the pair
    path.write_text(json.dumps(data))
    return tmp_path / "runs"


def _board(results: Path, api: Any) -> tuple[Any, str]:
    frame, note = hub_leaderboard.board(results, load_entries(results), "mmbench/MM-SpuBench", api)
    return frame, html.unescape(note)  # the note is escaped Markdown


def test_merge_one_row_per_model_variant_and_mode_with_each_source(online: None, results: Path) -> None:
    api = StubApi(
        [_entry("org/a", 0.55, True), _entry("org/c", 0.3, False), _entry("org/d", 0.9, True, taskId="other")]
    )
    frame, note = _board(results, api)
    assert api.asked == ["mmbench/MM-SpuBench"]
    assert (
        note
        == "- run a-old not shown: run a-new is a later run of the same model, prompt variant and answer mode"
    )
    assert list(frame["Model"].map(lambda m: m.split("]")[0].strip("["))) == ["org/a", "org/c"]
    a, c = frame.iloc[0], frame.iloc[1]
    assert a["Run"] == "a-new" and a["Hub Overall"] == pytest.approx(55.0) and a["Hub state"] == "verified"
    assert "samples re-checked" in a["Source"] and "Hub leaderboard (verified): Hub Overall" in a["Source"]
    assert not math.isnan(a["CGLA_acc"])  # the results run's own figures stay
    assert c["Overall"] == pytest.approx(30.0) and c["Hub state"] == "community"
    assert c["Source"].startswith("Hub leaderboard (community): Overall and Hub Overall") and math.isnan(
        c["Average"]
    )


def test_offline_shows_the_results_dataset_alone_with_a_note(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    api = StubApi([_entry("org/c", 0.3, False)])
    frame, note = _board(results, api)
    assert api.asked == [] and "offline" in note and len(frame) == 1


@pytest.mark.parametrize(
    ("api", "said"),
    [
        (StubApi(ConnectionError("no route")), "not available (ConnectionError)"),
        (StubApi([]), "no entries yet"),
        (object(), "has no get_dataset_leaderboard"),
    ],
)
def test_hub_failures_fall_back_with_a_note(online: None, results: Path, api: Any, said: str) -> None:
    frame, note = _board(results, api)
    assert said in note and list(frame["Source"].str.startswith("results dataset")) == [True]


def test_a_run_failing_the_submit_checks_is_left_out(online: None, results: Path) -> None:
    path = results / "a-new" / "results.json"
    data = json.loads(path.read_text())
    data["accuracy"]["overall"] = 99.0  # not what its samples give
    path.write_text(json.dumps(data))
    frame, note = _board(results, StubApi([]))
    assert list(frame["Run"]) == ["a-old"]
    assert "run a-new left out" in note and "accuracy.overall" in note
