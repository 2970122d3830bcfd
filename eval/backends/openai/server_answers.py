"""What an OpenAI-compatible server answers, checked before it is used: one line naming the fault.

A server is outside input like any file: a ``content`` that is a number or a list, an answer
without ``choices``, token ids that are not integers, prompt log-probabilities that are positive,
NaN or fewer than the tokens, chat-completion tokens that do not end where ``/tokenize`` of the
same messages ends (a server that honours ``continue_final_message`` in ``/tokenize`` but not in
chat completions would have the end-of-turn and generation-prompt tokens scored). Each is refused
here with :class:`MMSpuBenchError`; no figure is computed from it. Server text in these lines
passes :func:`mmspubench.redact.clean`. A generated reply's reasoning, finish reason and token
counts are read into :class:`~mmspubench.eval.protocol.Generation` (:func:`reply`), the record
every engine's replies take.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.protocol import Generation, ScoreRequest
from mmspubench.redact import clean

FAULT = "--backend openai: the server's answer is not usable"
"""How every line about a malformed server answer begins."""


def show(value: Any, limit: int = 80) -> str:
    """A short, cleaned ``repr`` of a server value for an error line."""
    text = repr(clean(value)) if isinstance(value, str) else clean(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def answer_text(response: Any, what: str = "chat completion", fault: str = FAULT) -> str:
    """The text of a chat completion's first choice (``None`` content is ``""``), else one line
    beginning with ``fault``."""
    if not hasattr(response, "choices"):  # a body that is not an object: a number, an HTML page
        raise MMSpuBenchError(f"{fault}: the {what} is {show(response)}; expected an object with 'choices'")
    choices = response.choices
    if not isinstance(choices, list) or not choices:
        raise MMSpuBenchError(f"{fault}: the {what} has no choices (got {show(choices)})")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None) if message is not None else None
    if content is None:
        return ""
    if not isinstance(content, str):
        raise MMSpuBenchError(
            f"{fault}: the {what}'s message content is {type(content).__name__} {show(content)}; "
            "expected a string"
        )
    return content


def token_ids(value: Any, what: str) -> list[int]:
    """A list of integer token ids (no bools, floats or strings), else one line."""
    if not isinstance(value, list) or not all(type(t) is int and t >= 0 for t in value):
        raise MMSpuBenchError(f"{FAULT}: {what} is {show(value)}; expected a list of token ids (integers)")
    return list(value)


def tokenize_tokens(result: Any) -> list[int]:
    """The ``tokens`` of a ``/tokenize`` answer."""
    if not isinstance(result, dict):
        raise MMSpuBenchError(f"{FAULT}: /tokenize answered {show(result)}; expected an object with 'tokens'")
    return token_ids(result.get("tokens"), "/tokenize's 'tokens'")


def check_same_tokens(tokenized: Sequence[int], scored: Sequence[int], request: ScoreRequest) -> None:
    """The chat completion's prompt tokens are exactly ``/tokenize``'s of the same messages."""
    if list(scored) == list(tokenized):
        return
    where = f"continuation {show(request.continuation)}"
    if len(scored) > len(tokenized) and list(scored[: len(tokenized)]) == list(tokenized):
        raise MMSpuBenchError(
            f"{FAULT}: {where}: its chat completion ran {len(scored) - len(tokenized)} prompt tokens "
            "after the end of /tokenize's tokens of the same messages: it ignores continue_final_message "
            "in chat completions, so end-of-turn and generation-prompt tokens would be scored"
        )
    raise MMSpuBenchError(
        f"{FAULT}: {where}: its chat completion ran {len(scored)} prompt tokens that are not /tokenize's "
        f"{len(tokenized)} tokens of the same messages; the scored tokens would not be the continuation's"
    )


def prompt_logprobs(data: Any) -> tuple[list[int], list[Any]] | None:
    """``prompt_token_ids`` and ``prompt_logprobs`` of a chat completion (``None`` when it has
    none: a server without them); the same number of each, else one line."""
    if not isinstance(data, dict):
        raise MMSpuBenchError(f"{FAULT}: the chat completion is {show(data)}; expected an object")
    ids, logprobs = data.get("prompt_token_ids"), data.get("prompt_logprobs")
    if not ids or not logprobs:
        return None
    ids = token_ids(ids, "'prompt_token_ids'")
    if not isinstance(logprobs, list) or len(logprobs) != len(ids):
        size = len(logprobs) if isinstance(logprobs, list) else type(logprobs).__name__
        raise MMSpuBenchError(
            f"{FAULT}: it returned {len(ids)} prompt token ids but {size} prompt log-probabilities; "
            "expected one per token"
        )
    return ids, logprobs


def token_logprob(entry: Any, token: int, position: int) -> float:
    """The log-probability of ``token`` in one position's entry: finite and <= 0, else one line."""
    value = entry.get(str(token), entry.get(token)) if isinstance(entry, dict) else None
    if isinstance(value, dict):
        value = value.get("logprob")
    if value is None:
        raise MMSpuBenchError(f"{FAULT}: it returned no log-probability for prompt token {position}")
    if type(value) not in (int, float) or not math.isfinite(value) or value > 0:
        raise MMSpuBenchError(
            f"{FAULT}: it returned the log-probability {show(value)} for prompt token {position}; "
            "expected a finite number <= 0"
        )
    return float(value)


def continuation_sum(
    context: Sequence[int], full: Sequence[int], logprobs: Sequence[Any], request: ScoreRequest
) -> float:
    """Sum of the prompt log-probabilities of the tokens of ``full`` after ``context`` (checked prefix)."""
    if list(full[: len(context)]) != list(context):
        raise MMSpuBenchError(
            f"continuation {show(request.continuation)}: the server's tokens of the context are not a "
            "prefix of its tokens of context + continuation; the scored tokens would not be the continuation's"
        )
    if len(full) <= len(context):
        raise MMSpuBenchError(f"continuation {show(request.continuation)}: adds no token after the context")
    return sum(token_logprob(logprobs[p], full[p], p) for p in range(len(context), len(full)))


def count(holder: Any, field: str) -> int | None:
    """A token count of ``usage`` (or its details): a non-negative integer, else ``None``. A count
    the server got wrong (a string, a negative number) is not counted rather than refused: the
    answer itself is usable."""
    value = getattr(holder, field, None) if holder is not None else None
    return value if type(value) is int and value >= 0 else None


def _text_field(message: Any, field: str, what: str) -> str | None:
    value = getattr(message, field, None)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MMSpuBenchError(
            f"{FAULT}: the {what}'s message {field} is {type(value).__name__} {show(value)}; expected a string"
        )
    return value


def reply(response: Any, what: str = "chat completion") -> Generation:
    """The first choice's text, reasoning (vLLM's ``reasoning_content`` or the newer ``reasoning``),
    finish reason and token counts, each checked (a text or reasoning that is not a string and a
    finish reason that is not a string are one line; see :func:`count` for the counts)."""
    text = answer_text(response, what)
    choice = response.choices[0]
    message = getattr(choice, "message", None)
    reasoning = _text_field(message, "reasoning_content", what) or _text_field(message, "reasoning", what)
    finish = getattr(choice, "finish_reason", None)
    if finish is not None and not isinstance(finish, str):
        raise MMSpuBenchError(
            f"{FAULT}: the {what}'s finish_reason is {type(finish).__name__} {show(finish)}; expected a string"
        )
    usage = getattr(response, "usage", None)
    return Generation(
        text=text,
        reasoning=reasoning,
        finish_reason=finish,
        prompt_tokens=count(usage, "prompt_tokens"),
        completion_tokens=count(usage, "completion_tokens"),
        reasoning_tokens=reasoning_count(usage),
    )


def reasoning_count(usage: Any) -> int | None:
    """``usage.completion_tokens_details.reasoning_tokens`` (:func:`count`); ``None`` also where it
    exceeds ``completion_tokens``, of which it is a part."""
    thought = count(getattr(usage, "completion_tokens_details", None), "reasoning_tokens")
    completion = count(usage, "completion_tokens")
    return None if thought is not None and completion is not None and thought > completion else thought
