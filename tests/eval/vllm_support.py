"""Helpers of the vLLM tests: the separate vLLM environment and a model folder vLLM can load.

vLLM runs in its own virtual environment (``.ci/vllm-venv.sh DIR``; it pins an older
transformers), found through ``MMSPUBENCH_VLLM_PYTHON`` (that environment's python). Tests run the
vLLM side, and the transformers side they compare it with, in subprocesses of that python, so
both backends see the same transformers and image processor.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

VLLM_PYTHON_ENV = "MMSPUBENCH_VLLM_PYTHON"
"""Environment variable naming the python of the vLLM environment."""

VLLM_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "TORCHDYNAMO_DISABLE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
"""Settings of every vLLM subprocess on a CPU machine (1 GiB KV cache, no compilation, offline)."""


def vllm_python() -> str:
    """The vLLM environment's python, or skip the test when it is not configured."""
    path = os.environ.get(VLLM_PYTHON_ENV)
    if not path:
        pytest.skip(f"{VLLM_PYTHON_ENV} is not set (build the environment with .ci/vllm-venv.sh DIR)")
    if not Path(path).is_file():
        pytest.fail(f"{VLLM_PYTHON_ENV}={path}: no such file")
    return path


def vllm_env() -> dict[str, str]:
    """The process environment for a vLLM subprocess."""
    return {**os.environ, **VLLM_ENV}


def vllm_ready_copy(src: Path, dst: Path) -> Path:
    """A copy of a tiny LLaVA saved by transformers 5 whose weight names vLLM reads
    (:func:`mmspubench.eval.backends.vllm.layout.to_vllm_layout`)."""
    from mmspubench.eval.backends.vllm.layout import to_vllm_layout

    if dst.exists():
        return dst
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    to_vllm_layout(tmp)
    tmp.rename(dst)
    return dst
