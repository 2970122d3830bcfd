"""The prepared GPU script of the engines benchmark runs on this CPU with ``--tiny`` (slow; vLLM).

``bench/gpu_engines.sh --tiny`` takes the same code path as the GPU run (bench/engines.py: the
engines on the same items, one table) on the bundled tiny model; the table it prints has a row per
engine (vLLM reading its prefix cache and not) with equal predictions and CGLs within the equality
tests' tolerance, and the CGLA table has the computed tokens per item, never below the minimum.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.eval.vllm_support import vllm_env, vllm_python

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ENGINES = {"transformers-plain", "transformers-fast", "vllm", "vllm-no-cache-read"}
ROW = re.compile(
    r"^\| (transformers-plain|transformers-fast|vllm|vllm-no-cache-read) \|(.*)\|$", re.MULTILINE
)


def test_gpu_script_runs_on_the_cpu_with_tiny() -> None:
    env = {**vllm_env(), "PYTHON": vllm_python()}
    run = subprocess.run(
        ["bash", str(ROOT / "bench/gpu_engines.sh"), "--tiny", "--items", "4"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    main, _, tokens = run.stdout.partition("## CGLA part")
    rows = {engine: [cell.strip() for cell in cells.split("|")] for engine, cells in ROW.findall(main)}
    assert set(rows) == ENGINES, run.stdout
    for engine, cells in rows.items():
        _load, accuracy_rate, cgla_rate, cgl_diff, same, minutes = cells
        assert float(accuracy_rate) > 0 and float(cgla_rate) > 0 and float(minutes) > 0, engine
        assert float(cgl_diff) <= 1e-4 and same == "True", engine
    assert re.search(r"fastest accuracy part: \S+; fastest CGLA part: \S+", run.stdout)
    assert "4 items" in run.stdout
    cgla = {engine: [cell.strip() for cell in cells.split("|")] for engine, cells in ROW.findall(tokens)}
    assert set(cgla) == ENGINES - {"transformers-plain"}, run.stdout
    for engine, (rate, computed, minimum, ratio, rescored) in cgla.items():
        assert float(rate) > 0 and float(computed) > 0 and float(minimum) > 0, engine
        # not reading the cache, vLLM computes every condition's whole prompt
        assert engine != "vllm-no-cache-read" or float(ratio) > 1, engine
        assert (rescored == "-") == (engine == "transformers-fast"), engine
    assert re.search(
        r"vLLM CGLA, cache read / not read: [0-9.]+x; cache read / transformers-fast: [0-9.]+x", tokens
    )
