"""What ``--backend openai`` asks for in a generation request, and what it learns from a refusal.

Generation requests send the token budget as ``max_completion_tokens`` (OpenAI's current name;
vLLM and SGLang take it too), ``temperature=0`` (greedy) and ``--reasoning-effort`` where given.
Reasoning models of the OpenAI API refuse ``max_tokens`` and any temperature but their default;
older servers refuse ``max_completion_tokens``. The run's first generation request finds out
(:func:`adjusted`): a 400 (or 422) naming ``max_completion_tokens`` as unknown switches to
``max_tokens``, one naming ``temperature`` leaves the temperature out (the model's default:
answers are sampled, not greedy), and the request is sent again; what was used is
:class:`Sampling`, recorded in results.json. Any other refusal of a parameter is one line naming
it and the option to change (:func:`refusal_line`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

BUDGET, OLD_BUDGET = "max_completion_tokens", "max_tokens"
"""The token budget's parameter, and the one an older server takes instead."""

OPTION_OF = {
    "reasoning_effort": "change or drop --reasoning-effort",
    "max_completion_tokens": "change --max-new-tokens",
    "max_tokens": "change --max-new-tokens",
    "chat_template_kwargs": "run with --thinking auto (the server takes no chat_template_kwargs)",
}
"""What to change when the server refuses a parameter the run sends (the temperature and the
budget's name are handled by :func:`adjusted`)."""

DEFAULT_ONLY = "the model accepts only its default temperature: answers are sampled, not greedy"
"""``environment.generation.temperature_note`` of a run whose model refused ``temperature=0``."""

_NAMED = re.compile(r"\b(" + "|".join(["temperature", *OPTION_OF]) + r")\b")
_UNSUPPORTED = re.compile(
    r"unsupported|unrecognized|unknown|not permitted|extra|not supported|does not support|only the default",
    re.I,
)
"""How a refusal says a parameter (or its value) is not taken at all, rather than out of range."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """How generation requests are sent to this server (found out on the run's first one)."""

    budget: str = BUDGET
    """The token budget's parameter: ``max_completion_tokens``, or ``max_tokens`` for a server that refuses it."""
    greedy: bool = True
    """``temperature=0`` is sent; ``False``: the model refused it, no temperature is sent (its default)."""

    def generation(self) -> dict[str, Any]:
        """results.json's ``environment.generation`` (``{"temperature": 0.0}`` when greedy, as before)."""
        if self.greedy:
            return {"temperature": 0.0}
        return {"temperature": None, "temperature_note": DEFAULT_ONLY}


def request_params(
    sampling: Sampling, max_new_tokens: int, reasoning_effort: str | None, extra: dict[str, Any]
) -> dict[str, Any]:
    """The parameters of one generation request (besides model and messages). ``extra`` is the
    body's non-OpenAI part (vLLM's ``add_special_tokens``, ``continue_final_message``; a
    ``chat_template_kwargs`` dict goes there too)."""
    params: dict[str, Any] = {sampling.budget: max_new_tokens}
    if sampling.greedy:
        params["temperature"] = 0.0
    if reasoning_effort is not None:
        params["reasoning_effort"] = reasoning_effort
    params["extra_body"] = dict(extra) or None
    return params


def refused(err: BaseException) -> tuple[str, str] | None:
    """The parameter a 400 or 422 answer names (its ``param``, else the first one of ours its
    message names) and the server's message; ``None`` for another error."""
    if getattr(err, "status_code", None) not in (400, 422):
        return None
    body = getattr(err, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    text = message if isinstance(message, str) else str(getattr(err, "message", "") or err)
    param = getattr(err, "param", None)
    if not (isinstance(param, str) and _NAMED.fullmatch(param)):
        found = _NAMED.search(text)
        param = found.group(1) if found else None
    return (param, text) if param is not None else None


def adjusted(sampling: Sampling, err: BaseException) -> Sampling | None:
    """The sampling to try next after the server refused a request, ``None`` when the refusal is
    not one that leaving a parameter out or renaming it answers."""
    found = refused(err)
    if found is None:
        return None
    param, text = found
    code = getattr(err, "code", None)
    unsupported = code in ("unsupported_parameter", "unsupported_value") or bool(_UNSUPPORTED.search(text))
    if param == "temperature" and sampling.greedy and unsupported:
        return replace(sampling, greedy=False)
    if param == BUDGET and sampling.budget == BUDGET and unsupported and code != "unsupported_value":
        return replace(sampling, budget=OLD_BUDGET)
    return None


def refusal_line(err: BaseException) -> tuple[str, str, str] | None:
    """``(parameter, the server's message, what to change)`` for a refusal of a parameter tied to
    an option (:data:`OPTION_OF`), else ``None``."""
    found = refused(err)
    if found is None or found[0] not in OPTION_OF:
        return None
    return found[0], found[1], OPTION_OF[found[0]]
