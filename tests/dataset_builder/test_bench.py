from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "build.py"


@pytest.mark.slow
def test_build_peak_memory_is_flat_from_n_to_4n() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--n", "150", "--images", "noise"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "peak RSS 4N / N" in result.stdout and ": ok" in result.stdout
