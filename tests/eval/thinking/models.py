"""Tiny random Qwen3-VL models whose chat templates think as the real ones do.

The templates are the ChatML template of the tiny family builders with the generation-prompt block
of the real thinking templates, copied as test data:

- :data:`SWITCHABLE`: Qwen3's (Qwen/Qwen3-8B, tokenizer_config.json ``chat_template``): the
  assistant turn opens plain, and ``enable_thinking=False`` writes the empty reasoning block
  ``<think>\\n\\n</think>\\n\\n`` (the model thinks unless told not to).
- :data:`ALWAYS`: Qwen3-VL-*-Thinking's (Qwen/Qwen3-VL-8B-Thinking, chat_template.json): the
  assistant turn opens the reasoning block ``<think>\\n`` and nothing switches it.
"""

from __future__ import annotations

from pathlib import Path

from tests.eval.families.builders_b import QWEN_IMAGE, build_qwen3_vl

_TURNS = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}" + QWEN_IMAGE + "{% elif item['type'] == 'text' %}"
    "{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
)
SWITCHABLE = _TURNS + (
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
)
"""A Qwen3-style template: thinks by default, ``enable_thinking=False`` writes the empty block."""
ALWAYS = (
    _TURNS
    + "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}\n"
)
"""A Qwen3-VL-Thinking-style template: the assistant turn opens ``<think>``; no switch."""
EMPTY_BLOCK = "<think>\n\n</think>\n\n"
"""What Qwen3's template writes after the generation prompt with ``enable_thinking=False``."""


def build_thinking_model(folder: Path, template: str) -> Path:
    """A tiny random Qwen3-VL (the family matrix's) saved with ``template`` as its chat template."""
    build_qwen3_vl(folder)
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    return folder
