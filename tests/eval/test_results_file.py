"""results.json as typed records (``eval.results_file``): read once, written back byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import read_run
from mmspubench.eval.results_file import (
    BENCHMARK,
    Accuracy,
    Cgla,
    Dataset,
    Model,
    Results,
    read_results_file,
)

from tests.eval.fakes import run_fake

METRICS = ("accuracy", "cgla", "circular", "blind")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run folder of the fake model: eval's own results.json with two confound views."""
    out = tmp_path_factory.mktemp("results_file") / "run"
    run_fake(out, 12, metrics=METRICS, blind_image="grey")
    return out


def _text(obj: Any) -> str:
    """JSON text as eval writes results.json."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def test_a_real_results_json_reads_and_writes_back_byte_for_byte(run_dir: Path) -> None:
    path = run_dir / "results.json"
    results = read_results_file(path)
    assert _text(results.to_json()) == path.read_text()
    assert results.benchmark == BENCHMARK and results.schema_version == 1
    assert results.model is not None and results.model.id == "fake"
    assert results.dataset is not None and results.dataset.n == 12 and results.dataset.split == "test"
    assert results.accuracy is not None and results.accuracy.n == 12
    assert results.accuracy.ci95_overall is not None and "worst_type" in results.accuracy.keys
    assert results.cgla is not None and results.cgla.core_reduction is not None
    assert set(results.sections) == {"circular", "blind"}  # the views' own sections, by name
    assert results.section("blind") == json.loads(path.read_text())["blind"]
    assert results.section("calibration") is None and results.metrics == list(METRICS)


def test_every_key_eval_writes_is_typed(run_dir: Path) -> None:
    """No key of a results.json written by eval lands in ``extra``: each is a field or a section."""
    results = read_results_file(run_dir / "results.json")
    assert results.extra == {}
    assert results.accuracy is not None and results.accuracy.extra == {}
    assert results.cgla is not None and results.cgla.extra == {}
    written = json.loads((run_dir / "results.json").read_text())
    typed = {f for f in Results.__dataclass_fields__ if f not in ("sections", "keys", "extra")}
    assert set(written) <= typed | set(results.sections)


def test_read_run_gives_the_typed_record(run_dir: Path) -> None:
    record = read_run(run_dir)
    assert isinstance(record.results, Results) and record.config.metrics == METRICS


HAND_WRITTEN = [
    {"benchmark": BENCHMARK, "accuracy": {"overall": 50.0}},  # a minimal file: absent keys stay absent
    {  # keys in another order, nulls, a key a newer version writes, a view this version lacks
        "benchmark": BENCHMARK,
        "future_key": [1, 2],
        "cgla": None,
        "accuracy": {"n": 3, "overall": None, "by_type": None, "brand_new": {"x": 1}},
        "dataset": {"path": "/data", "n": "ten", "revision": None},
        "model": {"id": "org/m", "scorer_used": "fast"},
        "my_view": {"score": 1},
        "created_at": None,
    },
]


@pytest.mark.parametrize("obj", HAND_WRITTEN)
def test_a_hand_written_file_round_trips_key_for_key(obj: dict[str, Any]) -> None:
    results = Results.from_json(obj, "results.json")
    assert _text(results.to_json()) == _text(obj)


def test_typed_fields_of_a_hand_written_file() -> None:
    results = Results.from_json(HAND_WRITTEN[1], "results.json")
    assert results.extra == {"future_key": [1, 2]} and results.section("my_view") == {"score": 1}
    assert results.accuracy is not None and results.accuracy.extra == {"brand_new": {"x": 1}}
    assert results.dataset is not None and results.dataset.n is None  # "ten" is no count
    assert results.dataset.get("n") == "ten" and results.dataset.get("path") == "/data"
    assert results.model is not None and results.model.scorer_used == "fast"


def test_written_puts_the_keys_in_eval_s_order() -> None:
    built = Results.written(
        schema_version=1,
        benchmark=BENCHMARK,
        dataset=Dataset.from_json({"id": "d", "split": "test", "n": 1}, "x"),
        model=Model.from_json({"id": "m"}, "x"),
        config={"metrics": ["accuracy", "blind"]},
        accuracy=Accuracy.from_json({"overall": 100.0, "n": 1}, "x"),
        cgla=None,
        sections={"blind": {"accuracy": 0.0}},
        timing={"total_seconds": 1.0},
        backend=None,
        environment=None,
        accuracy_only=True,
        created_at="2026-01-01T00:00:00+00:00",
        package_version="0.1.0",
    )
    assert list(built.to_json()) == [
        "schema_version", "benchmark", "dataset", "model", "config", "accuracy", "cgla", "blind",
        "timing", "backend", "environment", "accuracy_only", "created_at", "package_version",
    ]  # fmt: skip
    assert built.to_json()["cgla"] is None and isinstance(Cgla(), Cgla)


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        ({"benchmark": "other"}, "not an MM-SpuBench results.json (field 'benchmark')"),
        ({"dataset": [1]}, "field 'dataset' is list; expected an object"),
        ({"model": {"id": 5}}, "field 'model.id' is not a string or null"),
        ({"accuracy": {"overall": "50"}}, "field 'accuracy.overall': value '50' is not a finite number"),
        ({"cgla": {"by_type": {"BG": "x"}}}, "field 'cgla.by_type.BG': value 'x' is not a finite number"),
        ({"accuracy": {"n": 1.5}}, "field 'accuracy.n' is not an integer or null"),
        ({"created_at": 5}, "field 'created_at': 5 is not an ISO time"),
        ({"package_version": 1}, "field 'package_version': 1 is not a package version"),
        ({"accuracy_only": "yes"}, "field 'accuracy_only' is not true, false or null"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, edit: dict[str, Any], refusal: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"benchmark": BENCHMARK, **edit}))
    with pytest.raises(MMSpuBenchError, match="^" + re.escape(str(path)) + ": ") as err:
        read_results_file(path)
    assert refusal in str(err.value)


def test_a_file_that_is_not_json_keeps_its_refusal(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("{")
    with pytest.raises(MMSpuBenchError, match=r"^cannot read results: "):
        read_results_file(path)


def test_a_malformed_config_is_refused_when_parsed(tmp_path: Path) -> None:
    results = Results.from_json({"benchmark": BENCHMARK}, "r.json")
    with pytest.raises(MMSpuBenchError, match=r"^r\.json: field 'config' is malformed \('config'\)$"):
        results.run_config("r.json")
