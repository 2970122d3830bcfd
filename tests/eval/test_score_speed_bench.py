"""The scoring benchmarks run: the GPU script parses, and its Python path works on a tiny CPU model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_script_parses() -> None:
    subprocess.run(["bash", "-n", str(ROOT / "bench" / "gpu_score_speed.sh")], check=True)


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
