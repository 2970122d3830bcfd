from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.dataset_builder.schema import TYPE_ABBREV
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import data, prompts, results
from mmspubench.eval.config import RunConfig
from mmspubench.eval.runner import evaluate_item, run_eval

from tests.eval.fakes import DATASET_INFO, FakeModel, make_dataset
from tests.helpers.run_folders import eval_run


def _config(**options: Any) -> RunConfig:
    options.setdefault("batch_size", 3)
    return RunConfig(model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), **options)


def _run(out: Path, n: int = 10, model: FakeModel | None = None, **options: Any) -> dict[str, Any]:
    fake = model or FakeModel()
    out_obj = eval_run(out, lambda: fake, n=n, config=_config(**options))
    assert out_obj is not None
    return out_obj


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_results_follow_from_samples_by_plain_recount(tmp_path: Path) -> None:
    res = _run(tmp_path / "run", n=14)
    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk == res
    samples = _lines(tmp_path / "run" / "samples.jsonl")
    assert [s["id"] for s in samples] == [f"{i:06d}" for i in range(14)]
    # Plain recount, written independently of mmspubench.eval.metrics.
    per_type: dict[str, list[bool]] = {}
    cgla_type: dict[str, list[bool]] = {}
    for s in samples:
        core = max(c["cgl"] for c in s["conditions"] if c["kind"] == "core")
        spu = max(c["cgl"] for c in s["conditions"] if c["kind"] == "spurious")
        assert s["cgla_min"] == core - spu and s["cgla_acc"] == (core - spu > 0)
        for t in s["types"]:
            per_type.setdefault(TYPE_ABBREV[t], []).append(s["prediction"] == s["answer"])
            cgla_type.setdefault(TYPE_ABBREV[t], []).append(core - spu > 0)
    for abbrev in TYPE_ABBREV.values():
        hits = per_type.get(abbrev, [])
        expected = 100.0 * (sum(hits) / len(hits)) if hits else None
        assert on_disk["accuracy"]["by_type"][abbrev] == expected
        assert on_disk["accuracy"]["n_by_type"][abbrev] == len(hits)
        chits = cgla_type.get(abbrev, [])
        assert on_disk["cgla"]["by_type"][abbrev] == (100.0 * (sum(chits) / len(chits)) if chits else None)
    overall = [s["prediction"] == s["answer"] for s in samples]
    assert on_disk["accuracy"]["overall"] == 100.0 * (sum(overall) / len(overall))
    assert on_disk["accuracy"]["unparsed"] == sum(1 for s in samples if s["prediction"] is None)
    assert on_disk["accuracy"]["unparsed"] > 0  # the fake model scripts unparseable answers
    assert on_disk["cgla"]["acc"] == 100.0 * (sum(s["cgla_acc"] for s in samples) / len(samples))
    # The same figures again through read_run + recompute (what submit does).
    record = results.read_run(tmp_path / "run")
    again = results.recompute(record.samples, record.config)
    assert again["accuracy"] == on_disk["accuracy"] and again["cgla"] == on_disk["cgla"]


def test_results_json_has_the_design_fields(tmp_path: Path) -> None:
    res = _run(tmp_path / "run", n=4)
    assert {
        "schema_version",
        "benchmark",
        "dataset",
        "model",
        "config",
        "accuracy",
        "cgla",
        "timing",
        "created_at",
        "package_version",
    } <= set(res)
    assert {"overall", "by_type", "ci95", "unparsed", "n", "n_by_type"} <= set(res["accuracy"])
    assert {"acc", "by_type", "mean_cgla_min", "core_reduction"} <= set(res["cgla"])
    assert {"load_seconds", "accuracy_seconds", "cgla_seconds", "total_seconds"} <= set(res["timing"])
    assert res["config"]["prompts"]["version"] == prompts.PROMPT_VERSION
    # The whole split's size and sorted-id digest are recorded too (submit checks them).
    ids_digest = hashlib.sha256(b"000000\n000001\n000002\n000003").hexdigest()
    assert res["dataset"] == {
        **DATASET_INFO,
        "split": "test",
        "n": 4,
        "split_n": 4,
        "ids_sha256": ids_digest,
    }
    assert res["model"]["id"] == "fake"
    assert not list((tmp_path / "run").glob("*.rank*"))


def test_one_score_call_per_chunk_and_batched_generation(tmp_path: Path) -> None:
    fake = FakeModel()
    _run(tmp_path / "run", n=7, model=fake)
    sizes = [
        len(i.core_attributes) + len(i.spurious_attributes)
        for i in data.load_items(make_dataset(7), None, "hand-made")
    ]
    assert fake.score_calls == [sum(sizes[0:3]), sum(sizes[3:6]), sizes[6]]
    assert fake.generate_calls == [3, 3, 1]


def test_conditions_hold_exact_prompts_and_continuation() -> None:
    item = data.load_items(make_dataset(3), None, "hand-made")[2]
    fake = FakeModel()
    sample = evaluate_item(fake, item, _config())
    assert [c.kind for c in sample.conditions] == ["core"] * 3 + ["spurious"] * 4
    assert sample.conditions[0].prompt == fake.render(prompts.cgla_prompt("core 2-0"))
    assert all(c.continuation == " bike" for c in sample.conditions)


def test_logprob_mode_takes_the_argmax_letter(tmp_path: Path) -> None:
    _run(tmp_path / "run", n=6, answer_mode="logprob")
    for s in _lines(tmp_path / "run" / "samples.jsonl"):
        scores = s["option_scores"]
        assert len(scores) == 4 and s["raw_output"] is None
        assert s["prediction"] == "ABCD"[scores.index(max(scores))]
        assert s["correct"] == (s["prediction"] == s["answer"])


def test_metrics_option_runs_only_what_is_asked(tmp_path: Path) -> None:
    fake = FakeModel()
    res = _run(tmp_path / "acc", n=4, model=fake, metrics=("accuracy",))
    assert res["cgla"] is None and fake.score_calls == []
    res = _run(tmp_path / "cgla", n=4, metrics=("cgla",))
    assert res["accuracy"] is None and res["cgla"]["n"] == 4
    assert all(s["correct"] is None and s["conditions"] for s in _lines(tmp_path / "cgla" / "samples.jsonl"))


def test_rerun_skips_finished_items(tmp_path: Path) -> None:
    first = _run(tmp_path / "run", n=5)
    fake = FakeModel()
    second = _run(tmp_path / "run", n=5, model=fake, batch_size=2, device="meta")  # speed options may change
    assert fake.score_calls == [] and fake.generate_calls == []
    assert second["accuracy"] == first["accuracy"] and second["cgla"] == first["cgla"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"core_reduction": "mean"}, "core_reduction"),
        ({"answer_mode": "logprob"}, "answer_mode"),
        ({"limit": 3}, "limit"),
    ],
)
def test_refuses_to_resume_a_different_run(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    _run(tmp_path / "run", n=5)
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    with pytest.raises(MMSpuBenchError, match=f"different run.*{message}"):
        _run(tmp_path / "run", n=5, **change)
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == before


def test_refuses_a_different_model_or_dataset(tmp_path: Path) -> None:
    _run(tmp_path / "run", n=5)

    class Other(FakeModel):
        @property
        def info(self) -> Any:
            return FakeModel().info.__class__(
                id="fake", path="/elsewhere", revision=None, dtype="float32", adapter="fake"
            )

    # A finished run is told from its folder before any model loads: it is left as it was.
    assert _run(tmp_path / "run", n=5, model=Other()) == json.loads(
        (tmp_path / "run" / "results.json").read_text()
    )
    (tmp_path / "run" / "results.json").unlink()  # unfinished: the loaded model is checked
    with pytest.raises(MMSpuBenchError, match=r"model\.path"):
        _run(tmp_path / "run", n=5, model=Other())
    with pytest.raises(MMSpuBenchError, match=r"dataset\.revision"):
        run_eval(
            FakeModel,
            make_dataset(5),
            {**DATASET_INFO, "revision": "v2"},
            _config(),
            tmp_path / "run",
            progress=False,
        )


def test_bad_limit_and_bad_dataset_write_nothing(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match="--limit"):
        _run(tmp_path / "a", n=3, limit=0)
    broken = make_dataset(3).remove_columns(["class_name"])
    with pytest.raises(MMSpuBenchError, match=r"missing required field.*class_name"):
        run_eval(FakeModel, broken, dict(DATASET_INFO), _config(), tmp_path / "b", progress=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_limit_takes_the_first_items(tmp_path: Path) -> None:
    res = _run(tmp_path / "run", n=8, limit=3)
    assert res["dataset"]["n"] == 3
    assert [s["id"] for s in _lines(tmp_path / "run" / "samples.jsonl")] == ["000000", "000001", "000002"]


def test_tampered_sample_is_caught_by_recompute(tmp_path: Path) -> None:
    _run(tmp_path / "run", n=3)
    path = tmp_path / "run" / "samples.jsonl"
    rows = _lines(path)
    rows[1]["cgla_min"] += 1.0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    record = results.read_run(tmp_path / "run")
    with pytest.raises(MMSpuBenchError, match=r"000001.*cgla_min"):
        results.recompute(record.samples, record.config)
