"""``compare`` on two real runs of the bundled models; every figure recomputed from samples.jsonl."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from mmspubench.cli import main
from mmspubench.dataset_builder.schema import TYPE_ABBREV
from mmspubench.eval.bundled import BALANCED_MODEL

from tests.helpers.shared_runs import bundled_run

RESAMPLES = 300


@pytest.fixture(scope="module")
def bundled_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The default run and the balanced model's (each made once per session), and their comparison."""
    root = tmp_path_factory.mktemp("pair")
    a = bundled_run(tmp_path_factory, "default")
    b = bundled_run(tmp_path_factory, "balanced", model=str(BALANCED_MODEL))
    out = root / "cmp.json"
    argv = ["compare", str(a), str(b), "--json", str(out), "--resamples", str(RESAMPLES), "--seed", "4"]
    assert main(argv) == 0
    return a, b, json.loads(out.read_text())


def _samples(folder: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in rows}


def _p(only_a: int, only_b: int) -> float:
    n = only_a + only_b
    return 1.0 if n == 0 else min(1.0, 2 * sum(comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n)


def _ci(x: list[float], y: list[float], seed: int) -> list[float]:
    draws = np.random.default_rng(seed).integers(0, len(x), size=(RESAMPLES, len(x))).tolist()
    means = sorted(sum(y[i] - x[i] for i in row) / len(row) for row in draws)
    return list(np.quantile(means, [0.025, 0.975]))


def test_compare_figures_follow_from_the_two_sample_files(bundled_pair: tuple[Path, Path, dict]) -> None:
    a_dir, b_dir, doc = bundled_pair
    a, b = _samples(a_dir), _samples(b_dir)
    assert sorted(a) == sorted(b) and doc["n"] == len(a) == 90
    for group in doc["groups"]:
        ids = [
            i
            for i in sorted(a)
            if group["group"] == "Overall" or group["group"] in {TYPE_ABBREV[t] for t in a[i]["types"]}
        ]
        assert group["n"] == len(ids)
        for key in ("correct", "cgla_acc"):
            got = group["accuracy" if key == "correct" else "cgla_acc"]
            x = [100.0 * a[i][key] for i in ids]
            y = [100.0 * b[i][key] for i in ids]
            only_a = sum(a[i][key] and not b[i][key] for i in ids)
            only_b = sum(b[i][key] and not a[i][key] for i in ids)
            assert got["a"] == pytest.approx(sum(x) / len(x)) and got["b"] == pytest.approx(sum(y) / len(y))
            assert (got["only_a"], got["only_b"]) == (only_a, only_b)
            assert got["difference"] == pytest.approx((sum(y) - sum(x)) / len(x))
            assert got["p_value"] == pytest.approx(_p(only_a, only_b), rel=1e-12)
            assert got["ci95"] == pytest.approx(_ci(x, y, 4), abs=1e-9)
        x = [a[i]["cgla_min"] for i in ids]
        y = [b[i]["cgla_min"] for i in ids]
        assert group["cgla_min"]["difference"] == pytest.approx(float(np.mean(y) - np.mean(x)))
        assert group["cgla_min"]["ci95"] == pytest.approx(_ci(x, y, 4), abs=1e-9)
    # The two models do differ: the comparison is not trivially empty.
    overall = doc["groups"][0]
    assert overall["accuracy"]["only_a"] + overall["accuracy"]["only_b"] > 0
    assert doc["config_differences"] == {}  # same options; only the model differs
    assert (doc["a"]["model"], doc["b"]["model"]) == ("tiny-llava-biased", "tiny-llava-balanced")


def test_a_run_on_fewer_items_of_the_same_release_is_refused(
    bundled_pair: tuple[Path, Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_dir, _, _ = bundled_pair
    short = tmp_path / "short"
    assert (
        main(["eval", "--limit", "10", "--answer-mode", "logprob", "--out", str(short), "--no-progress"]) == 0
    )
    capsys.readouterr()
    assert main(["compare", str(a_dir), str(short), "--json", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "not runs on the same items" in err and "80 item(s) only in A" in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
