"""The Hub's leaderboard checked entry by entry, merged by model id, and the table's runs = the chart's runs."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from huggingface_hub import HfApi
from mmspubench.space import handlers, hub_leaderboard
from mmspubench.space.leaderboard import load_entries

from tests.eval.submit.test_submit import make_run, restamp

from .test_hub_leaderboard import StubApi, _entry

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def _board(results: Path | None, api: Any) -> tuple[Any, str]:
    entries = load_entries(results) if results is not None else []
    frame, note = hub_leaderboard.board(results, entries, "mmbench/MM-SpuBench", api)
    return frame, html.unescape(note)


def _models(frame: Any) -> list[str]:
    return [m.split("]")[0].strip("[") for m in frame["Model"]]


def _run(root: Path, name: str, model: str, revision: str | None = None, **config: Any) -> Path:
    path = make_run(root / name, model_id=model, **config)
    data = json.loads(path.read_text())
    data["model"]["revision"] = revision  # what `eval --model org/x` records: the snapshot's sha
    path.write_text(json.dumps(data))
    restamp(path)  # and stamps its samples with (the Space reads only a run's own samples)
    return path


# Item 7: every Hub entry is checked ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (5.0, "outside [0, 1]"),
        (-0.3, "outside [0, 1]"),
        (1e308, "outside [0, 1]"),
        (True, "not a finite number"),
        (math.inf, "not a finite number"),
        (math.nan, "not a finite number"),
        ("0.5", "not a finite number"),
        (None, "not a finite number"),
    ],
)
def test_a_hub_value_outside_0_1_or_not_a_number_is_left_out(online: None, value: Any, said: str) -> None:
    frame, note = _board(None, StubApi([_entry("org/bad", value, True), _entry("org/good", 0.25, False)]))
    assert _models(frame) == ["org/good"] and list(frame["Hub Overall"]) == [25.0]
    assert note.count("\n") == 0 and "1 of the Hub leaderboard's 2 entries left out: #1" in note
    assert said in note and "org/bad" in note


def test_hub_entry_fields_are_checked(online: None) -> None:
    bad = [
        {"modelId": "org/x", "value": 0.5},  # no verified field
        {"modelId": "org/y", "value": 0.5, "verified": "yes"},
        {"modelId": "not a repo id!", "value": 0.5, "verified": True},
        {"value": 0.5, "verified": True},
    ]
    frame, note = _board(None, StubApi([*bad, {"modelId": "org/z", "value": 0.5, "verified": True}]))
    assert _models(frame) == ["org/z"]
    assert "4 of the Hub leaderboard's 5 entries left out" in note and "and 1 more" in note


def test_only_bad_hub_entries_fall_back_to_the_results_dataset(online: None, tmp_path: Path) -> None:
    _run(tmp_path, "a", "org/a")
    frame, note = _board(tmp_path, StubApi([_entry("org/a", 500.0, True)]))
    assert list(frame["Run"]) == ["a"] and math.isnan(frame.loc[0, "Hub Overall"])
    assert "has no valid entries" in note and "results dataset alone" in note


# Item 14: a malformed Hub answer falls back, like a network error ----------------------------


@pytest.mark.parametrize("answer", [{"modelId": "org/a", "value": 0.5}, "org/a", 3, {"error": "x"}])
def test_a_hub_answer_that_is_not_a_list_falls_back_with_a_note(
    online: None, tmp_path: Path, answer: Any
) -> None:
    _run(tmp_path, "a", "org/a")
    frame, note = _board(tmp_path, StubApi(answer))
    assert list(frame["Run"]) == ["a"] and note.count("\n") == 0
    assert f"answered {type(answer).__name__}, not a list of entries" in note


class _Session:
    """The HTTP session huggingface_hub uses, answering one JSON body."""

    def __init__(self, body: Any) -> None:
        self.body = body

    def get(self, url: str, **_: Any) -> httpx.Response:
        return httpx.Response(200, json=self.body, request=httpx.Request("GET", url))


@pytest.mark.parametrize(
    "body",
    [
        {"leaderboard": []},  # an object: the library iterates its keys
        [{"modelId": "org/a", "value": 0.5, "verified": True}],  # an entry lacking rank, filename, author
        [["org/a", 0.5]],
    ],
)
def test_the_real_client_on_a_malformed_answer_falls_back(
    online: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: Any
) -> None:
    from huggingface_hub import hf_api

    monkeypatch.setattr(hf_api, "get_session", lambda: _Session(body))
    _run(tmp_path, "a", "org/a")
    frame, note = _board(tmp_path, HfApi(endpoint="https://hub.invalid"))
    assert list(frame["Run"]) == ["a"] and re.search(r"not available \((TypeError|KeyError)\)", note), note


def test_the_real_client_on_a_good_answer(
    online: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import hf_api

    author = {"type": "user", "name": "someone", "avatarUrl": "", "fullname": "Someone"}
    body = [
        {"rank": 1, "modelId": "org/a", "value": 0.4, "filename": "f", "verified": True, "author": author}
    ]
    monkeypatch.setattr(hf_api, "get_session", lambda: _Session(body))
    _run(tmp_path, "a", "org/a")
    frame, note = _board(tmp_path, HfApi(endpoint="https://hub.invalid"))
    assert note == "" and list(frame["Hub Overall"]) == [pytest.approx(40.0)]


# Item 19: merged by model id, verified over community, Source names real runs ----------------


def test_a_run_recording_the_snapshot_sha_merges_with_the_hub_entry_of_its_model(
    online: None, tmp_path: Path
) -> None:
    _run(tmp_path, "x", "org/x", revision=SHA)
    frame, note = _board(tmp_path, StubApi([_entry("org/x", 0.3, True)]))
    assert note == "" and len(frame) == 1 and frame.loc[0, "Run"] == "x" and frame.loc[0, "Revision"] == SHA
    assert frame.loc[0, "Hub Overall"] == pytest.approx(30.0) and frame.loc[0, "Hub state"] == "verified"
    assert frame.loc[0, "Overall"] != frame.loc[0, "Hub Overall"]  # the run's own figure stays


@pytest.mark.parametrize("order", [(True, False), (False, True)])
def test_verified_over_community_and_no_invented_run(online: None, order: tuple[bool, bool]) -> None:
    values = {True: 0.1, False: 0.9}
    hub = [_entry("org/z", values[v], v) for v in order]
    frame, note = _board(None, StubApi(hub))
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["Overall"] == row["Hub Overall"] == pytest.approx(10.0) and row["Hub state"] == "verified"
    assert row["Run"] == "" and row["Source"].startswith("Hub leaderboard (verified)")
    assert "org/z: 2 Hub leaderboard entries; the verified one" in note


def test_of_two_community_entries_the_first_listed_is_shown(online: None) -> None:
    frame, note = _board(None, StubApi([_entry("org/z", 0.7, False), _entry("org/z", 0.2, False)]))
    assert list(frame["Hub Overall"]) == [pytest.approx(70.0)] and "community one listed first" in note


def test_every_source_names_only_the_rows_own_existing_run(online: None, tmp_path: Path) -> None:
    _run(tmp_path, "x-std", "org/x", revision=SHA)
    _run(tmp_path, "x-focus", "org/x", revision=SHA, prompt_variant="core-focus")
    hub = [_entry("org/x", 0.9, True), _entry("org/x", 0.1, False), _entry("org/y", 0.5, False)]
    frame, _ = _board(tmp_path, StubApi(hub))
    assert sorted(frame["Run"]) == ["", "x-focus", "x-std"]
    for _, row in frame.iterrows():
        named = re.findall(r"run (\S+)", row["Source"])
        assert named == ([row["Run"]] if row["Run"] else []), row["Source"]
        assert all((tmp_path / run).is_dir() for run in named)
        if row["Run"]:
            assert row["Hub Overall"] == pytest.approx(90.0) and row["Hub state"] == "verified"


# Item 31: the table's runs are the chart's runs ----------------------------------------------


def test_table_rows_are_the_chart_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mmspubench.space.leaderboard import board_runs

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runs = tmp_path / "runs"
    for name, variant in [("s", "standard"), ("f", "core-focus"), ("c", "attribute-hint")]:
        _run(runs, f"biased-{name}", "org/biased", revision=SHA, prompt_variant=variant)
    for name, variant in [("s", "standard"), ("f", "core-focus")]:
        _run(runs, f"balanced-{name}", "org/balanced", prompt_variant=variant)
    state = handlers.load_state(handlers.SpaceConfig(results=str(runs), hub_models=()))
    table = handlers.leaderboard_table(state, "", None, "Average", False)
    assert len(table) == 5 == len(state.series) == len(board_runs(state.board))
    assert len(set(s.label for s in state.series)) == 5
    assert sorted(state.runs) == sorted(board_runs(state.board))
    # the chart draws the table's runs in the table's order
    for label, (_, row) in zip([s.label for s in state.series], state.board.iterrows(), strict=True):
        assert label.startswith(row["Model"].split("]")[0].strip("[")) and f"[{row['Variant']}," in label


def test_boundaries_and_odd_ids(online: None) -> None:
    hub = [
        _entry("org/zero", 0, False),
        _entry("org/one", 1, True),
        {"modelId": 42, "value": 0.5, "verified": True},
        {"modelId": "org/x)](javascript:alert(1)", "value": 0.5, "verified": True},
        {"modelId": "org/tiny", "value": 5e-324, "verified": False},
    ]
    frame, note = _board(None, StubApi(hub))
    assert sorted(_models(frame)) == ["org/one", "org/tiny", "org/zero"]
    assert sorted(frame["Hub Overall"]) == [0.0, pytest.approx(0.0), 100.0]
    assert "2 of the Hub leaderboard's 5 entries left out" in note and "javascript" not in "".join(
        frame["Model"]
    )


@pytest.mark.parametrize("answer", [None, []])
def test_an_empty_hub_answer_says_no_entries_yet(online: None, answer: Any) -> None:
    frame, note = _board(None, StubApi(answer))
    assert len(frame) == 0 and "has no entries yet" in note
