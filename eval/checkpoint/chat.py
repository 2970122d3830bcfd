"""The prompt as the model sees it: the processor's chat template over system, image and text turns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmspubench.eval.checkpoint.hooks import FamilyHooks
from mmspubench.eval.protocol import ChatPrompt


def render_chat(
    processor: Any, hooks: FamilyHooks, prompt: ChatPrompt, template_kwargs: Mapping[str, Any] | None = None
) -> str:
    """Chat template over [system (if non-empty), user: [image, text]] + generation prompt + prefix.

    If a template ignores the image entry, the processor's image placeholder is put at the start
    of the user text instead, so the image always reaches the model. Every backend that applies
    the chat template itself (transformers, vLLM offline) renders through this function.
    ``template_kwargs``: the template's own keywords (``enable_thinking`` of ``--thinking``,
    :mod:`~mmspubench.eval.checkpoint.thinking`).
    """
    kwargs = template_kwargs or {}
    text = _apply_template(processor, prompt, hooks.user_content(prompt.user_text), kwargs)
    image_token = getattr(processor, "image_token", None)
    if image_token and image_token not in text:
        text = _apply_template(
            processor, prompt, [{"type": "text", "text": f"{image_token}\n{prompt.user_text}"}], kwargs
        )
    return text + prompt.assistant_prefix


def render_text_chat(
    processor: Any, prompt: ChatPrompt, template_kwargs: Mapping[str, Any] | None = None
) -> str:
    """The same chat without the image: [system (if non-empty), user: [text]] + generation prompt +
    prefix (the blind view's text-only prompt)."""
    user = [{"type": "text", "text": prompt.user_text}]
    return _apply_template(processor, prompt, user, template_kwargs or {}) + prompt.assistant_prefix


def _apply_template(
    processor: Any, prompt: ChatPrompt, user: list[dict[str, str]], kwargs: Mapping[str, Any]
) -> str:
    messages: list[dict[str, Any]] = []
    if prompt.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": prompt.system}]})
    messages.append({"role": "user", "content": user})
    return str(processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kwargs))
