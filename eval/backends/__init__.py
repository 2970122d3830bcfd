"""Engines behind the model Protocol: transformers (default), vLLM offline, OpenAI-compatible servers.

Each backend builds a :class:`~mmspubench.eval.protocol.VisionLanguageModel`; the runner, the
result files and resume are the same for all of them. :func:`check_options` validates the cheap
options before anything is loaded; :func:`load_backend` builds the model; :func:`describe` is what
results.json records under ``backend`` (name, version, settings, and the API's token usage).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.api_key import check_key_env, read_api_key
from mmspubench.eval.config import BACKENDS

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

__all__ = ["BACKENDS", "DEFAULT_BATCH_SIZE", "BackendOptions", "check_options", "describe", "load_backend"]

DEFAULT_BATCH_SIZE = {"transformers": 8, "vllm": 256, "openai": 64}
"""Items per runner chunk when ``--batch-size`` is not given: engines that batch (vLLM's continuous
batching, concurrent API requests) get large chunks, so that many requests are in flight at once."""


@dataclass(frozen=True, slots=True)
class BackendOptions:
    """The engine options of ``mmspubench eval`` (``None`` = not given on the command line)."""

    name: str = "transformers"
    """``transformers``, ``vllm`` or ``openai``."""
    tensor_parallel_size: int | None = None
    """vLLM: GPUs one model is split across (``vllm.LLM(tensor_parallel_size=...)``)."""
    engine_args: Mapping[str, Any] = field(default_factory=dict)
    """vLLM: further keyword arguments of ``vllm.LLM`` (``max_model_len``, ``enforce_eager``, ...)."""
    base_url: str | None = None
    """openai: the server's base URL, e.g. ``http://127.0.0.1:8000/v1``."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: name of the environment variable holding the API key (the key is never written);
    ``none`` for a server that needs no key (:mod:`mmspubench.eval.backends.api_key`)."""
    max_concurrency: int = 8
    """openai: requests in flight at once."""
    max_retries: int = 5
    """openai: retries of a request after a 429, a 5xx, a timeout or a lost connection."""
    request_timeout: float = 120.0
    """openai: seconds before one request times out (then it is retried)."""


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


_ONLY_FOR = {
    "tensor_parallel_size": ("vllm", "--tensor-parallel-size"),
    "base_url": ("openai", "--base-url"),
}


def options_of(config: RunConfig) -> BackendOptions:
    """The engine options of a run config (``--engine-args`` parsed)."""
    return BackendOptions(
        name=config.backend,
        tensor_parallel_size=config.tensor_parallel_size,
        engine_args=parse_engine_args(config.engine_args),
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        max_concurrency=config.max_concurrency,
        max_retries=config.max_retries,
        request_timeout=config.request_timeout,
    )


def check_options(options: BackendOptions, model: str | None, metrics: tuple[str, ...]) -> None:
    """Refuse inconsistent engine options with one line, before any data or model is loaded."""
    if options.name not in BACKENDS:
        raise MMSpuBenchError(f"--backend {options.name!r}: unknown; expected one of {', '.join(BACKENDS)}")
    for attr, (backend, flag) in _ONLY_FOR.items():
        if getattr(options, attr) is not None and options.name != backend:
            raise MMSpuBenchError(f"{flag} is used only with --backend {backend}")
    if options.engine_args and options.name != "vllm":
        raise MMSpuBenchError("--engine-args is used only with --backend vllm")
    if options.tensor_parallel_size is not None and options.tensor_parallel_size < 1:
        raise MMSpuBenchError(f"--tensor-parallel-size {options.tensor_parallel_size}: expected at least 1")
    check_key_env(options.api_key_env)  # before anything records it as a variable's name
    if options.name == "openai":
        if not options.base_url:
            raise MMSpuBenchError("--backend openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
        if model is None:
            raise MMSpuBenchError("--backend openai needs --model NAME (the model name the server serves)")
        if options.max_concurrency < 1:
            raise MMSpuBenchError(f"--max-concurrency {options.max_concurrency}: expected at least 1")
        if options.max_retries < 0:
            raise MMSpuBenchError(f"--max-retries {options.max_retries}: expected 0 or more")
        if not options.request_timeout > 0:
            raise MMSpuBenchError(f"--request-timeout {options.request_timeout}: expected a positive number")
        read_api_key(options.api_key_env)  # an unset variable is refused before any work


def load_backend(
    options: BackendOptions,
    model: str,
    *,
    device: str,
    dtype: str,
    batch_size: int,
    scorer: str,
    trust_remote_code: bool,
    needs_prompt_logprobs: bool,
) -> Any:
    """Build the model of ``options.name`` (a ``VisionLanguageModel``)."""
    if options.name == "vllm":
        from mmspubench.eval.backends.vllm_engine import load_vllm

        return load_vllm(model, options, dtype=dtype, trust_remote_code=trust_remote_code)
    if options.name == "openai":
        from mmspubench.eval.backends.openai_api import load_openai

        return load_openai(model, options, needs_prompt_logprobs=needs_prompt_logprobs)
    from mmspubench.eval.backends.transformers.loading import load_model

    return load_model(
        model,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        scorer=scorer,
        trust_remote_code=trust_remote_code,
    )


def describe(model: Any) -> dict[str, Any]:
    """results.json's ``backend``: ``model.backend_info`` when the model has it, else the transformers
    adapter's (name, transformers version, scorer, batch size, device)."""
    info = getattr(model, "backend_info", None)
    if info is not None:
        return dict(info)
    try:
        import transformers

        version = transformers.__version__
    except ImportError:  # a fake model in a test environment without transformers
        version = None
    inner = getattr(model, "model", None)
    settings = {
        "scorer": getattr(model, "scorer", None),
        "batch_size": getattr(model, "batch_size", None),
        "device": str(getattr(inner, "device", "")) or None,
    }
    return {"name": "transformers", "version": version, "settings": settings}
