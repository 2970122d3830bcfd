"""The scoring benchmarks run: the GPU script parses, and its Python path works on a tiny CPU model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.process
def test_gpu_script_parses() -> None:
    subprocess.run(["bash", "-n", str(ROOT / "bench" / "gpu_score_speed.sh")], check=True)


@pytest.mark.process
def test_benchmark_tiny_profile_prints_both_scorers(tmp_path: Path) -> None:
    env = {**os.environ, "MMSPUBENCH_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "score_speed.py"),
            "--profile",
            "tiny",
            "--items",
            "2",
            "--items-per-call",
            "2",
            "--extrapolate",
            "2400",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith(("| cgla", "| options"))]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[-1]) <= 1e-4  # the two scorers agree (float32)
        assert int(cells[8]) < int(cells[7])  # fast processes fewer tokens than plain
    assert "extrapolated ratio" in out


@pytest.mark.slow
def test_benchmark_families_profile_prints_a_row_per_family(tmp_path: Path) -> None:
    from tests.eval.families.registry import BUILDERS, EXPECTED_ERRORS

    env = {**os.environ, "MMSPUBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    argv = ["--profile", "families", "--items", "1", "--items-per-call", "1", "--repeats", "1"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "score_speed.py"), *argv, "--workdir", str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    ).stdout
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    for family in BUILDERS:
        cells = [c.strip() for c in rows[family].strip("|").split("|")]
        if family in EXPECTED_ERRORS:
            assert cells[1].startswith("cannot load") and "pip install" in cells[1]
        else:
            assert float(cells[-1]) <= 1e-4  # the two scorers agree (float32)
