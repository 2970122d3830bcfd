"""The vLLM backend's token bookkeeping, without vLLM: which prompt log-probabilities are summed,
and the check that the engine ran our tokens (BOS included). The engine itself: test_vllm_equality.py."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.vllm.engine import check_same_tokens, continuation_sum
from mmspubench.eval.cli import main

IMAGE = 4


@dataclass
class _Logprob:
    logprob: float


def test_sums_exactly_the_continuation_tokens_after_expansion() -> None:
    ours = [1, 10, IMAGE, 11, 12, 20, 21]  # BOS, text, one placeholder, text, continuation 20 21
    ran = [1, 10, IMAGE, IMAGE, IMAGE, 11, 12, 20, 21]  # the engine expanded the placeholder
    logprobs = [None] + [{t: _Logprob(-0.1)} for t in ran[1:]]
    logprobs[7] = {20: _Logprob(-1.5), 99: _Logprob(-0.1)}
    logprobs[8] = {21: _Logprob(-0.25)}
    assert continuation_sum(ours, 5, ran, logprobs, IMAGE) == pytest.approx(-1.75)


@pytest.mark.parametrize(
    "ran",
    [
        [10, IMAGE, IMAGE, 11, 12, 20, 21],  # BOS left out (vLLM's chat endpoint without add_special_tokens)
        [1, 1, 10, IMAGE, IMAGE, 11, 12, 20, 21],  # BOS doubled
        [1, 10, IMAGE, IMAGE, 11, 12, 20, 22],  # another last token
    ],
)
def test_other_tokens_are_refused(ran: list[int]) -> None:
    with pytest.raises(MMSpuBenchError, match="other tokens"):
        check_same_tokens([1, 10, IMAGE, 11, 12, 20, 21], ran, IMAGE)


def test_missing_logprob_is_an_error() -> None:
    ours = ran = [1, 10, 20]
    with pytest.raises(MMSpuBenchError, match="no log-probability"):
        continuation_sum(ours, 2, ran, [None, {10: _Logprob(-1)}, {99: _Logprob(-1)}], IMAGE)


def test_reserved_engine_args_refused_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--backend", "vllm", "--limit", "1", "--out", str(tmp_path / "run")]
    assert main([*argv, "--engine-args", '{"dtype": "half", "max_model_len": 512}']) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("mmspubench eval: error: --engine-args: dtype are set by their own options")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_missing_vllm_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--backend", "vllm", "--limit", "1", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "vLLM is not installed" in err and not (tmp_path / "run" / "samples.jsonl").exists()
