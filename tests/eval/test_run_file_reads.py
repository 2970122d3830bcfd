"""Each run file (run.json, samples.jsonl, results.json) is read from disk at most once per ``eval``:
the folder is opened once, where it enters, and the run goes on from that record."""

from __future__ import annotations

import builtins
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import Interrupted
from mmspubench.eval import distributed, prompts
from mmspubench.eval.config import RunConfig
from mmspubench.eval.runner import run_eval

from tests.eval.fakes import DATASET_INFO, FakeModel, make_dataset

N = 6
RUN_FILES = ("run.json", "samples.jsonl", "results.json")


class StoppedModel(FakeModel):
    """Ctrl-C during its ``calls``-th generate call (a chunk of two items each)."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.calls = calls

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        if len(self.generate_calls) + 1 == self.calls:
            raise KeyboardInterrupt
        return super().generate(images, contexts, max_new_tokens)


def _run(out: Path, model: FakeModel) -> dict[str, Any] | None:
    config = RunConfig(model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), batch_size=2)
    return run_eval(
        lambda: model,
        make_dataset(N),
        dict(DATASET_INFO),
        config,
        out,
        shard=distributed.Shard(),
        progress=False,
        notify=lambda note: None,
    )


def _reads(monkeypatch: pytest.MonkeyPatch, out: Path) -> Counter[str]:
    """Count every opening for reading of a run file of ``out`` (``os.open`` and ``open``)."""
    counts: Counter[str] = Counter()
    real_os_open, real_open = os.open, builtins.open

    def note(path: Any, reading: bool) -> None:
        name = Path(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else None
        if reading and name is not None and name.parent == out and name.name in RUN_FILES:
            counts[name.name] += 1

    def counted_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        note(path, flags & os.O_ACCMODE == os.O_RDONLY)
        return real_os_open(path, flags, *args, **kwargs)

    def counted_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        note(file, "r" in mode and "+" not in mode)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted_os_open)
    monkeypatch.setattr(builtins, "open", counted_open)
    return counts


def _assert_once(counts: Counter[str]) -> None:
    assert all(n <= 1 for n in counts.values()), f"a run file was read more than once: {dict(counts)}"


def test_a_fresh_run_reads_no_run_file_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    counts = _reads(monkeypatch, out)
    assert _run(out, FakeModel()) is not None
    _assert_once(counts)


def test_a_resume_reads_each_run_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    with pytest.raises(Interrupted):
        _run(out, StoppedModel(2))  # one chunk (2 items) finished, the second is stopped
    counts = _reads(monkeypatch, out)
    assert _run(out, FakeModel()) is not None
    _assert_once(counts)


def test_a_rerun_of_a_finished_run_reads_each_run_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    first = _run(out, FakeModel())
    counts = _reads(monkeypatch, out)
    assert _run(out, FakeModel()) == first
    _assert_once(counts)
