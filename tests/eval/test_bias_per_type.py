"""The per-type positive control (``bench/bias_experiment.py --per-type``): its outputs follow from its runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")

from mmspubench.eval.analysis.compare import cli as compare_cli

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text().splitlines())}


def check_outputs(out: Path, printed: str) -> None:
    """Every printed figure of the control is recomputed from the four runs' samples."""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["planted"] == ["background"]
    assert (out / "report.md").read_text() == printed + "\n"
    for cue in ("broken", "aligned"):
        a, b = out / "runs" / f"balanced-{cue}", out / "runs" / f"cued-{cue}"
        assert json.loads((out / f"compare-{cue}.json").read_text()) == compare_cli.comparison(a, b)
        assert f"## cue {cue}: mmspubench compare" in printed
        x, y = _rows(a / "samples.jsonl"), _rows(b / "samples.jsonl")
        for name, keep in (("planted", True), ("other", False)):
            ids = [i for i in sorted(x) if ("background" in x[i]["types"]) is keep]
            row = summary["split"][cue][name]
            assert row["n"] == len(ids)
            for key in ("accuracy", "cgla_acc"):
                field = "correct" if key == "accuracy" else "cgla_acc"
                if not ids:
                    assert row[key] is None
                    continue
                got = row[key]
                assert got["a"] == pytest.approx(100 * sum(x[i][field] for i in ids) / len(ids))
                assert got["b"] == pytest.approx(100 * sum(y[i][field] for i in ids) / len(ids))
                assert got["only_b"] == sum(y[i][field] and not x[i][field] for i in ids)
            if ids:
                diff = sum(y[i]["cgla_min"] - x[i]["cgla_min"] for i in ids) / len(ids)
                assert row["cgla_min"]["difference"] == pytest.approx(diff)


def test_per_type_control_on_given_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mmspubench.eval.tiny.llava import build_tiny_llava

    balanced = build_tiny_llava(tmp_path / "m1", seed=1)
    cued = build_tiny_llava(tmp_path / "m2", seed=2)
    script = load("bias_experiment")
    out = tmp_path / "out"
    argv = ["--per-type", "BG", "--out", str(out), "--n", "9", "--image-size", "32"]
    assert (
        script.main([*argv, "--cued", str(cued), "--balanced", str(balanced), "--answer-mode", "logprob"])
        == 0
    )
    printed = capsys.readouterr().out.rstrip("\n")
    assert printed.startswith("## planted-type items vs the others")
    assert "| broken | with BG |" in printed and "| aligned | without BG |" in printed
    check_outputs(out, printed)
    with pytest.raises(Exception, match="already exists"):
        script.main([*argv, "--cued", str(cued), "--balanced", str(balanced)])


def test_type_names_and_the_shipped_twin() -> None:
    per_type = load("bias_per_type")
    from mmspubench.eval.tiny.train import TrainConfig

    assert per_type.parse_types("BG,shape") == ("background", "shape")
    with pytest.raises(Exception, match="weather"):
        per_type.parse_types("weather")
    # The shipped balanced model was trained with the default budget: reused for it, not for another.
    default = TrainConfig(out="x", correlation=0.95, correlated_types=("background",))
    assert per_type.shipped_balanced_matches(default)
    assert not per_type.shipped_balanced_matches(TrainConfig(out="x", correlation=0.95, steps=10))


@pytest.mark.slow
def test_per_type_control_trains_both_models_reduced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("bias_experiment")
    out = tmp_path / "out"
    argv = ["--per-type", "background", "--out", str(out), "--n", "18", "--image-size", "32"]
    argv += ["--n-items", "40", "--steps", "6", "--batch-size", "8", "--warmup", "2", "--log-every", "3"]
    assert script.main(argv) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    check_outputs(out, printed)
    cued = json.loads((out / "models" / "cued" / "training.json").read_text())["config"]
    balanced = json.loads((out / "models" / "balanced" / "training.json").read_text())["config"]
    assert cued["correlated_types"] == ["background"] and cued["correlation"] == 0.95
    assert balanced["correlation"] is None and balanced["correlated_types"] is None
    assert {k: v for k, v in cued.items() if k not in ("out", "correlation", "correlated_types")} == {
        k: v for k, v in balanced.items() if k not in ("out", "correlation", "correlated_types")
    }
