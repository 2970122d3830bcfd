"""``--backend openai``'s declaration: its options, default batch size, checks and loader.

The client itself is :mod:`mmspubench.eval.backends.openai.client` (imported when a run loads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.api_key import DEFAULT_KEY_ENV, check_key_env, read_api_key
from mmspubench.eval.backends.plugin import Backend
from mmspubench.options import option

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
"""``--reasoning-effort``'s values (which ones a model takes is the model's: a refusal is one line)."""


@dataclass(frozen=True, slots=True)
class Options:
    """The server's options; results.json's ``backend.settings`` records them (URL redacted, never a key)."""

    base_url: str | None = option(
        None,
        "openai: server URL, e.g. http://127.0.0.1:8000/v1 (--model: the name it serves)",
        recorded=False,
    )
    """Base URL of the chat-completions server."""
    api_key_env: str = option(
        DEFAULT_KEY_ENV,
        "openai: NAME of the environment variable holding the API key, or none for a server "
        f"that needs no key (default: {DEFAULT_KEY_ENV})",
        recorded=False,
    )
    """Name of the environment variable with the key (the key itself is never written);
    ``none`` for a server that needs no key (:mod:`mmspubench.eval.backends.api_key`)."""
    max_concurrency: int = option(
        8,
        "openai: requests in flight at once (default: 8)",
        arg_type=int,
        recorded=False,
        minimum=1,
        maximum=1024,
        expect="an integer from 1 to 1024",
    )
    """Requests in flight at once."""
    max_retries: int = option(
        5,
        "openai: retries after a 429, 5xx, timeout or lost connection (default: 5)",
        arg_type=int,
        recorded=False,
        minimum=0,
        maximum=100,
        expect="an integer from 0 to 100",
    )
    """Retries of a failed request (exponential backoff)."""
    request_timeout: float = option(
        120.0,
        "openai: seconds per request before it is retried (default: 120)",
        arg_type=float,
        recorded=False,
        minimum=0.001,
        maximum=86400,
        expect="a number of seconds from 0.001 to 86400",
    )
    """Timeout of one request in seconds (then it is retried)."""
    reasoning_effort: str | None = option(
        None,
        "openai: reasoning_effort sent to a reasoning model, recorded in the backend settings "
        "(default: none sent)",
        choices=REASONING_EFFORTS,
        recorded=False,
    )
    """The ``reasoning_effort`` of every generation request; ``None``: not sent (the model's default)."""


def _check(options: Options, config: RunConfig) -> None:
    check_key_env(options.api_key_env)  # before anything records it as a variable's name
    if not options.base_url:
        raise MMSpuBenchError("--backend openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
    if config.model is None:
        raise MMSpuBenchError("--backend openai needs --model NAME (the model name the server serves)")
    read_api_key(options.api_key_env)  # an unset variable is refused before any work


def _load(config: RunConfig, device: str) -> Any:
    from mmspubench.eval.backends.openai.client import load_openai

    assert config.model is not None
    needs = "cgla" in config.metrics or config.answer_mode == "logprob"
    return load_openai(
        config.model, config.backend_options, needs_prompt_logprobs=needs, thinking=config.thinking
    )


BACKEND = Backend(name="openai", options=Options, default_batch_size=64, load=_load, check=_check)
