from __future__ import annotations

import json
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import results
from mmspubench.eval.records import Condition, SampleResult


def _sample(i: int) -> SampleResult:
    return SampleResult(
        id=f"{i:06d}",
        types=("background",),
        answer="A",
        prediction="A",
        correct=True,
        raw_output="A",
        option_scores=None,
        class_name="cat",
        conditions=(
            Condition("fur", "core", "p", " cat", -1.0),
            Condition("sofa", "spurious", "p", " cat", -2.0),
        ),
        cgla_min=1.0,
        cgla_acc=True,
    )


def test_writer_drops_a_partial_last_line_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    with results.SampleWriter(path) as writer:
        writer.write(_sample(0))
    with path.open("ab") as handle:
        handle.write(b'{"id": "000001", "typ')
    assert [s.id for s in results.read_samples(path)[0]] == ["000000"]
    with results.SampleWriter(path) as writer:
        writer.write(_sample(1))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["000000", "000001"]


def test_a_corrupt_complete_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"id": "1"}\n')
    with pytest.raises(MMSpuBenchError, match="line 1: not a sample record"):
        results.read_samples(path)


def test_atomic_json_leaves_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    with pytest.raises(ValueError):
        results.write_json_atomic(target, {"cgl": float("nan")})
    assert list(tmp_path.iterdir()) == []
    results.write_json_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}


def test_manifest_checks(tmp_path: Path) -> None:
    results.check_manifest(tmp_path / "new", "config", {"a": 1})  # nothing there yet: fine
    results.write_manifest(tmp_path / "run", {"config": {"a": 1, "b": 2}})
    results.check_manifest(tmp_path / "run", "config", {"a": 1, "b": 2})
    with pytest.raises(MMSpuBenchError, match=r"different run.*config\.b: 2 -> 3"):
        results.check_manifest(tmp_path / "run", "config", {"a": 1, "b": 3})
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "samples.jsonl").write_text("")
    with pytest.raises(MMSpuBenchError, match=r"no run\.json"):
        results.check_manifest(stray, "config", {"a": 1})


def test_duplicate_ids_with_different_contents_are_refused() -> None:
    from mmspubench.eval.config import RunConfig

    other = SampleResult(
        **{**{f: getattr(_sample(0), f) for f in SampleResult.__slots__}, "correct": False, "prediction": "B"}
    )
    with pytest.raises(MMSpuBenchError, match="appears twice"):
        results.recompute([_sample(0), other], RunConfig(model="m", dataset="d"))
    same = results.recompute([_sample(0), _sample(0)], RunConfig(model="m", dataset="d"))
    assert same["accuracy"]["n"] == 1
