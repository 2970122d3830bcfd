"""vLLM's thinking path equals transformers', for real, on this CPU machine (slow; needs
MMSPUBENCH_VLLM_PYTHON).

Inside the vLLM environment (both sides on its transformers), the tiny LLaVA trained to think
(eval/assets/tiny-llava-thinking: ``<think>`` and ``</think>`` are special tokens of its
tokenizer, its chat template has Qwen3's ``enable_thinking``) runs ``--thinking on`` in generate
mode on the offline engine and on transformers: every reply is read the same (raw output kept
whole, reasoning, answer text, prediction, truncated, the path that read it), with the same
completion token counts and the same recorded thinking mode; with ``--max-new-tokens 8``, below
its reasoning, every reply is cut on both.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval.bundled import ASSETS

from tests.eval.vllm_support import vllm_env, vllm_python, vllm_ready_copy

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODEL = ASSETS / "tiny-llava-thinking"
LIMIT = 20
BUDGETS = {"fits": 32, "short": 8}
"""``--max-new-tokens`` of the two runs (bench/thinking_control.py's): one that fits the replies,
one below the reasoning's 15 tokens."""
FIELDS = ("raw_output", "reasoning", "answer_text", "prediction", "truncated", "read_by")


def _driver(backend: str, model: Path, out: Path) -> None:
    """Both budgets' runs by one model load in the vLLM environment (vllm_thinking_driver.py)."""
    cmd = [vllm_python(), str(ROOT / "tests/eval/vllm_thinking_driver.py"), backend, str(model),
           str(out), str(LIMIT), json.dumps(BUDGETS)]  # fmt: skip
    subprocess.run(cmd, env=vllm_env(), check=True, timeout=1800, cwd=out.parent)


def _samples(run: Path) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in map(json.loads, (run / "samples.jsonl").read_text().splitlines())}


def _thinking(run: Path) -> Any:
    return json.loads((run / "results.json").read_text())["model"]["thinking"]


def test_offline_engine_thinks_like_transformers(tmp_path: Path) -> None:
    engine, reference = tmp_path / "vllm", tmp_path / "transformers"
    start = time.perf_counter()
    _driver("vllm", vllm_ready_copy(MODEL, tmp_path / "tiny-llava-thinking-vllm"), engine)
    middle = time.perf_counter()
    _driver("transformers", MODEL, reference)
    print(f"vLLM: {middle - start:.0f} s, transformers: {time.perf_counter() - middle:.0f} s (both budgets)")
    for name in BUDGETS:
        got, want = _samples(engine / name), _samples(reference / name)
        assert got.keys() == want.keys() and len(got) == LIMIT, name
        for key, sample in got.items():
            for field in FIELDS:
                assert sample.get(field) == want[key].get(field), (name, key, field)
            assert sample["tokens"]["completion"] == want[key]["tokens"]["completion"], (name, key)
        thinking = _thinking(engine / name)
        assert thinking == _thinking(reference / name) and thinking["mode"] == "on", name
    fits, short = _samples(engine / "fits").values(), _samples(engine / "short").values()
    right, cut = sum(s["correct"] for s in fits), sum(bool(s.get("truncated")) for s in short)
    print(f"--max-new-tokens 32: {right}/{LIMIT} right on both; 8: {cut}/{LIMIT} cut on both")
    assert not any(s.get("truncated") for s in fits)
    assert all(s["reasoning"] and s["answer_text"] is not None for s in fits)
    assert all(s.get("truncated") for s in short)  # cut inside the reasoning, on both (above)
    assert all(s["prediction"] is None and s["read_by"] == "none" for s in short)
