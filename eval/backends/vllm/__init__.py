"""``--backend vllm``'s declaration: its options, default batch size, checks and loader.

The engine itself is :mod:`mmspubench.eval.backends.vllm.engine` (imported when a run loads it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.plugin import Backend
from mmspubench.options import option

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig


@dataclass(frozen=True, slots=True)
class Options:
    """vLLM's own options (``vllm.LLM`` arguments); none is recorded in results.json's ``config``."""

    tensor_parallel_size: int | None = option(
        None,
        "vllm: GPUs one model is split across (default: 1)",
        arg_type=int,
        recorded=False,
        minimum=1,
        maximum=1024,
        expect="an integer from 1 to 1024",
    )
    """``tensor_parallel_size`` of ``vllm.LLM``."""
    engine_args: str | None = option(
        None, "vllm: JSON object of more vllm.LLM arguments, e.g. '{\"max_model_len\": 4096}'", recorded=False
    )
    """A JSON object of further ``vllm.LLM`` keyword arguments (``max_model_len``, ``enforce_eager``, ...)."""


def parse_engine_args(text: str | None) -> dict[str, Any]:
    """``--engine-args JSON`` -> a dict of keyword arguments; anything but a JSON object is an error."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as err:
        raise MMSpuBenchError(
            f"--engine-args: not valid JSON ({err}); expected an object like '{{\"max_model_len\": 4096}}'"
        ) from None
    if not isinstance(value, dict):
        raise MMSpuBenchError(f"--engine-args: expected a JSON object, got {type(value).__name__}")
    return value


def _check(options: Options, config: RunConfig) -> None:
    parse_engine_args(options.engine_args)


def _preflight(config: RunConfig, world: int) -> None:
    if world > 1:
        raise MMSpuBenchError(
            "--backend vllm runs in one process (it places the model on the GPUs itself): use "
            "--tensor-parallel-size or --engine-args instead of several launched processes"
        )


def _load(config: RunConfig, device: str) -> Any:
    from mmspubench.eval.backends.vllm.engine import load_vllm

    assert config.model is not None
    return load_vllm(
        config.model,
        config.backend_options,
        dtype=config.dtype,
        trust_remote_code=config.trust_remote_code,
        run=config,
    )


def _thinks(config: RunConfig) -> bool:
    from mmspubench.eval.checkpoint.thinking import thinks_before_loading

    return thinks_before_loading(config)


BACKEND = Backend(
    name="vllm",
    options=Options,
    default_batch_size=256,
    load=_load,
    check=_check,
    preflight=_preflight,
    thinks=_thinks,
)
