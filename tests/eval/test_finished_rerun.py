"""A rerun of a finished run says so before the model is loaded (no weights, no empty progress bar)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main

from tests.eval.fakes import FakeModel
from tests.helpers.run_folders import eval_run, fake_config


def _run(out: Path, load: Any, notes: list[str], limit: int | None = None) -> dict[str, Any] | None:
    return eval_run(out, load, config=fake_config(batch_size=2, limit=limit), notify=notes.append)


def test_a_finished_rerun_never_loads_the_model(tmp_path: Path) -> None:
    out = tmp_path / "run"
    loads: list[int] = []

    def load() -> FakeModel:
        loads.append(1)
        return FakeModel()

    notes: list[str] = []
    first = _run(out, load, notes)
    assert loads == [1] and notes == []
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = _run(out, load, notes)
    assert loads == [1], "the model was loaded for a run that was already finished"
    assert again == first and len(notes) == 1 and "already finished" in notes[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_an_unfinished_or_edited_run_still_loads_and_runs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    loads: list[int] = []

    def load() -> FakeModel:
        loads.append(1)
        return FakeModel()

    notes: list[str] = []
    _run(out, load, notes)
    forged = json.loads((out / "results.json").read_text())
    forged["accuracy"]["overall"] = 99.0
    (out / "results.json").write_text(json.dumps(forged))
    again = _run(out, load, notes)  # the figures differ from the samples': rewritten, as before
    assert loads == [1, 1] and notes == [] and again is not None and again["accuracy"]["overall"] != 99.0


def test_the_command_says_finished_without_a_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    argv = ["eval", "--limit", "2", "--metrics", "accuracy", "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("weights loaded for a finished run")

    monkeypatch.setattr("mmspubench.eval.backends.transformers.loading.load_checked", refuse)
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "already finished" in err and "eval:" not in err and "0item" not in err
