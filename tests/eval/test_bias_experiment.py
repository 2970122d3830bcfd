"""The positive-control experiment: its figures follow from its per-sample records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("torch")

from mmspubench.eval import metrics
from mmspubench.eval.records import SampleResult

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bias_experiment.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bias_experiment", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def experiment_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    from mmspubench.eval.tiny.llava import build_tiny_llava

    script = load_script()
    root = tmp_path_factory.mktemp("bias")
    models = {
        "biased": build_tiny_llava(root / "m1", seed=1),
        "balanced": build_tiny_llava(root / "m2", seed=2),
    }
    rows = script.experiment(
        models, root / "out", n=4, seed=1, image_size=32, answer_mode="logprob", batch_size=4
    )
    return root / "out", rows


def read_samples(path: Path) -> list[SampleResult]:
    return [SampleResult.from_json(json.loads(line)) for line in path.read_text().splitlines()]


def test_summary_and_table_are_written_for_every_model_and_cue(
    experiment_run: tuple[Path, list[dict]],
) -> None:
    out, rows = experiment_run
    assert [(r["model"], r["cue"]) for r in rows] == [
        ("biased", "aligned"),
        ("balanced", "aligned"),
        ("biased", "broken"),
        ("balanced", "broken"),
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert [r["folder"] for r in summary["rows"]] == [r["folder"] for r in rows]
    table = (out / "table.md").read_text()
    assert table.count("\n") == 2 + len(rows)
    for r in rows:
        assert f"| {r['model']} | {r['cue']} | 4 | {r['accuracy']:.1f} [" in table
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_figures_are_recomputable_from_the_per_sample_records(
    experiment_run: tuple[Path, list[dict]],
) -> None:
    out, _ = experiment_run
    summary = json.loads((out / "summary.json").read_text())
    for row in summary["rows"]:
        samples = read_samples(out / row["folder"] / "samples.jsonl")
        assert len(samples) == row["n"] == 4
        # Recomputed by hand from the raw fields, not through the experiment's own code.
        correct = [s.prediction == s.answer for s in samples]
        assert all(s.correct == c for s, c in zip(samples, correct, strict=True))
        assert row["accuracy"] == pytest.approx(100.0 * sum(correct) / len(correct))
        mins = []
        for s in samples:
            core = max(c.cgl for c in s.conditions if c.kind == "core")
            spurious = [c.cgl for c in s.conditions if c.kind == "spurious"]
            mins.append(min(core - t for t in spurious))
        assert [s.cgla_min for s in samples] == pytest.approx(mins, abs=1e-12)
        assert row["cgla_acc"] == pytest.approx(100.0 * sum(m > 0 for m in mins) / len(mins))
        assert row["mean_cgla_min"] == pytest.approx(float(np.mean(mins)))
        low, high = row["mean_cgla_min_ci95"]
        assert min(mins) - 1e-12 <= low <= row["mean_cgla_min"] <= high <= max(mins) + 1e-12
        assert row["accuracy_ci95"] == list(metrics.bootstrap_ci(correct, row["config"]["seed"]))


def test_bootstrap_mean_interval_matches_the_accuracy_bootstrap_on_zero_one_data() -> None:
    script = load_script()
    values = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    low, high = script.bootstrap_mean_ci(values, seed=3)
    ref_low, ref_high = metrics.bootstrap_ci([v == 1.0 for v in values], seed=3)
    assert (100 * low, 100 * high) == pytest.approx((ref_low, ref_high))
    assert script.bootstrap_mean_ci([2.5, 2.5, 2.5], seed=0) == (2.5, 2.5)
    with pytest.raises(ValueError):
        script.bootstrap_mean_ci([], seed=0)
