"""Issue 9, eval side: a resumed run never mixes records of another run; bad folders are one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import results
from mmspubench.eval.checkpoint.hub import resolve_model
from mmspubench.eval.records import SampleResult

from tests.helpers.run_folders import eval_run, fake_config


def _run(out: Path, n: int = 5, **options: Any) -> dict[str, Any]:
    result = eval_run(out, n=n, config=fake_config(**options))
    assert result is not None
    return result


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_sample_line_carries_the_run_stamp_and_old_readers_still_read_it(tmp_path: Path) -> None:
    _run(tmp_path / "run")
    lines = _lines(tmp_path / "run" / "samples.jsonl")
    stamps = {line["run"] for line in lines}
    assert len(stamps) == 1 and len(next(iter(stamps))) == 16
    samples, _ = results.read_samples(tmp_path / "run" / "samples.jsonl")
    assert [s.id for s in samples] == [line["id"] for line in lines]
    assert all(isinstance(s, SampleResult) for s in samples)


@pytest.mark.parametrize("other", [{"answer_mode": "logprob"}, {"core_reduction": "mean"}, {"seed": 3}])
def test_samples_copied_in_from_another_run_are_refused(tmp_path: Path, other: dict[str, Any]) -> None:
    _run(tmp_path / "mine")
    _run(tmp_path / "theirs", **other)
    # Keep this run's run.json; replace its samples by the other run's, minus the last (so it resumes).
    theirs = (tmp_path / "theirs" / "samples.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "mine" / "samples.jsonl").write_text("".join(theirs[:-1]))
    (tmp_path / "mine" / "results.json").unlink()
    with pytest.raises(
        MMSpuBenchError, match=r"line 1: record '000000' was written by run .*refusing to mix"
    ):
        _run(tmp_path / "mine")
    assert not (tmp_path / "mine" / "results.json").exists()


def test_unstamped_sample_lines_are_refused(tmp_path: Path) -> None:
    _run(tmp_path / "run")
    path = tmp_path / "run" / "samples.jsonl"
    lines = _lines(path)
    for line in lines:
        del line["run"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines[:-1]))
    with pytest.raises(MMSpuBenchError, match="carries no run stamp"):
        _run(tmp_path / "run")


def test_a_resumed_run_keeps_its_stamp(tmp_path: Path) -> None:
    first = _run(tmp_path / "run")
    path = tmp_path / "run" / "samples.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))
    (tmp_path / "run" / "results.json").unlink()
    second = _run(tmp_path / "run")
    assert second["accuracy"] == first["accuracy"] and second["cgla"] == first["cgla"]
    assert len({line["run"] for line in _lines(path)}) == 1


def test_eval_out_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x")
    with pytest.raises(MMSpuBenchError, match="--out is a file"):
        _run(tmp_path / "out")


@pytest.mark.parametrize(
    "manifest",
    [
        "[]",
        '{"config": [], "dataset": {}, "model": {}}',
        '{"config": 5}',
        "{",
        '{"config": {}, "dataset": {}, "dataset": {}, "model": {}}',
    ],
)
def test_a_broken_run_json_is_one_line(tmp_path: Path, manifest: str) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(manifest)
    with pytest.raises(MMSpuBenchError, match=r"run\.json"):
        _run(tmp_path / "run")


def test_the_split_ids_are_recorded_in_run_json_and_results(tmp_path: Path) -> None:
    out = _run(tmp_path / "run", limit=2)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    # The whole split (5 items), not only the --limit ones.
    assert out["dataset"]["split_n"] == manifest["dataset"]["split_n"] == 5
    assert out["dataset"]["n"] == 2
    assert out["dataset"]["ids_sha256"] == manifest["dataset"]["ids_sha256"]


def test_a_model_folder_with_only_pickled_weights_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")
    with pytest.raises(MMSpuBenchError, match=r"only pickled \.bin weights"):
        resolve_model(str(folder))
