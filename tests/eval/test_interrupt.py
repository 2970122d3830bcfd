"""Ctrl-C in eval: the bar's line ends, the message says what was kept and how to resume, the rerun
says it resumes, and the finished run's timing counts every part."""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import Interrupted
from mmspubench.eval import distributed
from mmspubench.guard import run_guarded

from tests.eval.fakes import FakeModel
from tests.helpers.run_folders import eval_run, fake_config

N = 9


class StoppedModel(FakeModel):
    """Ctrl-C during its ``calls``-th generate call (a chunk of three items each), after a pause."""

    def __init__(self, calls: int, pause: float = 0.0) -> None:
        super().__init__()
        self.calls, self.pause = calls, pause

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        time.sleep(self.pause)
        if len(self.generate_calls) + 1 == self.calls:
            raise KeyboardInterrupt
        return super().generate(images, contexts, max_new_tokens)


def _run(out: Path, model: FakeModel, notes: list[str], progress: bool = False) -> dict[str, Any] | None:
    config = fake_config(batch_size=3)
    shard = distributed.Shard()
    return eval_run(
        out, lambda: model, n=N, config=config, shard=shard, progress=progress, notify=notes.append
    )


def test_an_interrupted_run_says_what_it_kept_and_the_rerun_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    notes: list[str] = []
    with pytest.raises(Interrupted) as stopped:
        _run(out, StoppedModel(3, pause=0.2), notes)  # two chunks (6 items) finish, the third is stopped
    assert str(stopped.value) == (
        f"6 finished item(s) are kept in {out}; rerun the same command (same --out) to resume"
    )
    assert notes == []
    results = _run(out, FakeModel(), notes)
    assert notes == [f"resuming {out}: 6 of 9 items were scored before; scoring the other 3"]
    assert results is not None
    timing = results["timing"]
    # the interrupted part's finished chunks (two pauses of 0.2 s) count in the run's time
    assert timing["parts"] == 2 and timing["items_scored"] == 3
    assert timing["total_seconds"] >= 0.4 and timing["accuracy_seconds"] >= 0.4


def test_an_interrupt_before_any_item_keeps_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(Interrupted) as stopped:
        _run(out, StoppedModel(1), [])
    assert str(stopped.value) == f"no item had finished, so nothing was kept ({out} was removed)"
    assert not out.exists()


def test_a_run_in_one_part_says_one_part(tmp_path: Path) -> None:
    results = _run(tmp_path / "run", FakeModel(), [])
    assert results is not None and results["timing"]["parts"] == 1 and results["timing"]["items_scored"] == N


def test_the_progress_bar_ends_its_line_and_the_message_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar's line is ended before the command's message (it read 'eval: 67%|...| 6/9interrupted')."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)

    def command(_: Any) -> int:
        _run(tmp_path / "run", StoppedModel(3), [], progress=True)
        return 0

    assert run_guarded("eval", command, None) == 130
    text = err.getvalue()
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    assert last == (
        f"mmspubench eval: interrupted; 6 finished item(s) are kept in {tmp_path / 'run'}; "
        "rerun the same command (same --out) to resume"
    )
    assert "6/9" in text.rsplit("\n", 2)[-3]  # the bar, on its own line before the message
    # a resumed bar counts the whole run: it starts at 6 of 9
    err.truncate(0)
    err.seek(0)
    _run(tmp_path / "run", FakeModel(), [], progress=True)
    assert "9/9" in err.getvalue() and "3/3" not in err.getvalue()


def test_the_closing_line_says_the_run_was_resumed(tmp_path: Path) -> None:
    from mmspubench.eval.commands import _summary

    out = tmp_path / "run"
    with pytest.raises(Interrupted):
        _run(out, StoppedModel(2), [])
    results = _run(out, FakeModel(), [])
    assert results is not None
    line = _summary(results, out).splitlines()[0]
    assert line.endswith("s over 2 runs of eval (resumed)"), line
    once = _run(tmp_path / "once", FakeModel(), [])
    assert once is not None and "resumed" not in _summary(once, tmp_path / "once")
