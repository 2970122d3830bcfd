"""An Inspect reply read as ``mmspubench eval`` reads a generated one: its reasoning apart, its
answer read from the text after the reasoning only (``mmspubench.eval.replies``).

Inspect keeps a model's reasoning as ``ContentReasoning`` parts of the assistant message (its own
providers parse a server's ``reasoning_content`` and inline ``<think>`` blocks into them; our
provider ``mmspubench/<model>`` splits its model's reply by the family's markers and does the
same); the message's text (``ModelOutput.completion``) holds only the text after the reasoning.
That reasoning is read as a server's ``reasoning_content`` is by eval (rule 5 of
:mod:`~mmspubench.eval.replies.reasoning`), and a stop by the token budget
(``stop_reason: max_tokens``) as eval's ``finish_reason: length``.

The style is told from the reply (:func:`reply_style`), since the task does not know the model's
family: Kimi's markers give ``kimi``, GLM's answer box or ``<answer>`` tag ``glm``, ``<think>``
markers or reasoning apart ``think``, and a reply with none of them ``none`` (read whole, as before).
The task's solver and ``mmspubench ingest inspect`` read with the same function
(:func:`read_inspect_reply`), so a log's recorded choice is what ingest reads again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmspubench.eval.protocol import Generation
from mmspubench.eval.replies.reading import Reading, read_reply
from mmspubench.eval.replies.reasoning import Split, split_reply

BUDGET_STOP = "max_tokens"
"""Inspect's ``stop_reason`` of a reply cut by its token budget (eval's ``finish_reason: length``)."""
_KIMI = ("◁think▷", "◁/think▷")
_GLM = ("<|begin_of_box|>", "<|end_of_box|>", "<answer>", "</answer>")
_THINK = ("<think>", "</think>")


def message_reasoning(message: Any) -> str | None:
    """The reasoning of an assistant message: its ``ContentReasoning`` parts joined by blank lines
    (a redacted part by its summary, else empty); ``None`` when it has none."""
    from inspect_ai.model import ContentReasoning

    content = getattr(message, "content", None)
    parts = [p for p in content if isinstance(p, ContentReasoning)] if isinstance(content, list) else []
    if not parts:
        return None
    return "\n\n".join((p.summary or "") if p.redacted else p.reasoning for p in parts)


def output_reasoning(output: Any) -> str | None:
    """The reasoning of a ``ModelOutput``'s first choice (:func:`message_reasoning`)."""
    choices = getattr(output, "choices", None) or []
    return message_reasoning(choices[0].message) if choices else None


def reply_style(text: str, reasoning: str | None) -> str:
    """The reasoning style a reply shows (module doc)."""
    if any(marker in text for marker in _KIMI):
        return "kimi"
    if any(tag in text for tag in _GLM):
        return "glm"
    if reasoning is not None or any(marker in text for marker in _THINK):
        return "think"
    return "none"


def reply_generation(text: str, reasoning: str | None, stop_reason: str | None) -> Generation:
    """The reply as eval's engines return one (``max_tokens`` -> ``finish_reason: length``)."""
    finish = "length" if stop_reason == BUDGET_STOP else None if stop_reason is None else "stop"
    return Generation(text, reasoning=reasoning, finish_reason=finish)


def read_inspect_reply(
    text: str,
    reasoning: str | None,
    stop_reason: str | None,
    options: Sequence[str],
    final_answer: bool = False,
    style: str | None = None,
) -> tuple[Split, Reading]:
    """The reply split (under ``style``, by default :func:`reply_style`) and its answer read by
    the strict parser from the text after the reasoning (no judge)."""
    chosen = reply_style(text, reasoning) if style is None else style
    split = split_reply(reply_generation(text, reasoning, stop_reason), chosen)
    return split, read_reply(split, options, final_answer, None)
