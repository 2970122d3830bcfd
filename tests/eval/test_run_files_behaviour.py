"""The run folder as a user meets it: file modes, reruns of finished runs, failures before the
first item, the printed summary and the libraries' progress bars."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mmspubench
import pytest
from mmspubench.eval.commands import _summary

from tests.eval.fakes import FakeModel
from tests.eval.tiny_models import tiny_model_dir
from tests.helpers.run_folders import eval_run, fake_config


def _run(out: Path, n: int = 4, model: Any = None, notes: list[str] | None = None) -> dict[str, Any] | None:
    notify = None if notes is None else notes.append
    return eval_run(out, lambda: model or FakeModel(), n=n, config=fake_config(batch_size=2), notify=notify)


@pytest.fixture
def umask() -> Iterator[Any]:
    previous = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(previous)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_run_files_follow_the_umask(mask: int, mode: int, umask: Any, tmp_path: Path) -> None:
    umask(mask)
    _run(tmp_path / "run")
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert names == ["results.json", "run.json", "samples.jsonl"]
    for name in names:
        assert stat.S_IMODE((tmp_path / "run" / name).stat().st_mode) == mode, name


def test_rerunning_a_finished_run_leaves_results_json_unchanged_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _run(out)
    before = (out / "results.json").read_bytes()
    notes: list[str] = []
    again = _run(out, notes=notes)
    assert (out / "results.json").read_bytes() == before and again == first
    assert len(notes) == 1 and "already finished" in notes[0]


def test_a_foreign_results_json_in_a_finished_run_is_rewritten_from_the_samples(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _run(out)
    assert first is not None
    forged = {**first, "accuracy": {**first["accuracy"], "overall": 99.0}}
    (out / "results.json").write_text(json.dumps(forged))
    notes: list[str] = []
    again = _run(out, notes=notes)
    assert again is not None and again["accuracy"] == first["accuracy"] and notes == []
    assert json.loads((out / "results.json").read_text())["accuracy"] == first["accuracy"]


class _FailsAtOnce(FakeModel):
    def generate(self, *args: Any, **kwargs: Any) -> list[str]:
        raise RuntimeError("the model broke on its first call")


def test_a_failure_before_the_first_item_leaves_no_run_behind(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(RuntimeError):
        _run(out, model=_FailsAtOnce())
    assert not out.exists()
    out.mkdir()  # a folder the user made stays, empty
    with pytest.raises(RuntimeError):
        _run(out, model=_FailsAtOnce())
    assert out.is_dir() and list(out.iterdir()) == []


class _FailsOnSecondChunk(FakeModel):
    def generate(self, images: Any, contexts: Any, max_new_tokens: int) -> list[str]:
        if self.generate_calls:
            raise RuntimeError("the model broke on its second call")
        return super().generate(images, contexts, max_new_tokens)


def test_a_failure_after_items_finished_keeps_them_for_the_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(RuntimeError):
        _run(out, n=4, model=_FailsOnSecondChunk())
    assert (out / "run.json").is_file()
    assert len((out / "samples.jsonl").read_text().splitlines()) == 2
    assert _run(out, n=4) is not None  # the resume finishes the other two


def test_the_summary_prints_the_cgla_acc_interval() -> None:
    results = {
        "accuracy": {"overall": 50.0, "ci95": {"overall": [25.0, 75.0]}, "n": 4, "unparsed": 0},
        "cgla": {
            "acc": 62.5,
            "ci95": {"acc": [37.5, 87.5]},
            "n": 4,
            "mean_cgla_min": 0.5,
            "core_reduction": "best",
        },
        "model": {},
        "timing": {"cgla_seconds": 1.0, "total_seconds": 2.0},
    }
    text = _summary(results, Path("runs/x"))
    assert "CGLA_acc 62.50% (95% CI 37.50-87.50; n=4" in text


def test_no_progress_hides_the_weights_bar_and_gives_it_back(
    session_cache: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as tf_logging

    model = tiny_model_dir("llava", session_cache)
    capfd.readouterr()
    mmspubench.evaluate(model=model, limit=1, metrics="accuracy", progress=False)
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "it/s" not in err
    assert tf_logging.is_progress_bar_enabled()  # switched back on after the run


def test_a_second_eval_into_a_folder_in_use_is_refused_and_the_first_goes_on(tmp_path: Path) -> None:
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.eval.run_folder import exclusive

    out = tmp_path / "run"
    with exclusive(out, rank=0):  # as a first run holds it while it writes
        with pytest.raises(MMSpuBenchError, match="another eval is writing into this run folder"):
            _run(out)
        assert list(out.iterdir()) == [out / ".lock.rank0"]
    assert _run(out) is not None  # free again once the first run ended
    assert not (out / ".lock.rank0").exists()


def test_ctrl_c_while_the_model_loads_leaves_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from mmspubench.cli import main
    from mmspubench.eval.backends import registry

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    real = registry.REGISTRY["transformers"]
    monkeypatch.setitem(registry.REGISTRY, "transformers", dataclasses.replace(real, load=interrupted))
    out = tmp_path / "run"
    assert main(["eval", "--limit", "2", "--out", str(out), "--no-progress"]) == 130
    assert capsys.readouterr().err.strip() == (
        f"mmspubench eval: interrupted; no item had finished, so nothing was kept ({out} was removed)"
    )
    assert not out.exists()


def test_an_early_failure_in_a_folder_of_other_files_removes_only_its_own(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    (out / "samples-old.jsonl").write_text("")
    with pytest.raises(RuntimeError):
        _run(out, model=_FailsAtOnce())
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "samples-old.jsonl"]
