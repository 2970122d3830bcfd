"""A generated reply split into its reasoning and the text its answer is read from.

Styles (:data:`STYLES`), from the family's chat template (:func:`style_for`):

- ``none``: no reasoning; the whole reply is the answer text.
- ``think``: ``<think>...</think>`` (Qwen3, Qwen3-VL-Thinking, Qwen3.5, InternVL3.5, a generic
  thinking model); ``think-open``: the same, for a rendered prompt that already ends in ``<think>``
  (the template's generation prompt opens the block), so the reply starts inside its reasoning
  and holds only the closing marker (:func:`style_after_prompt` tells from the prompt).
- ``glm``: ``<think>...</think>`` then the answer, boxed (``<|begin_of_box|>C<|end_of_box|>``)
  and/or in ``<answer>...</answer>`` (GLM-4.1V-Thinking, GLM-4.5V, GLM-4.6V).
- ``kimi``: ``◁think▷...◁/think▷`` (Kimi-VL-Thinking).

Rules of :func:`split_reply` (the markers are the style's; whitespace is trimmed everywhere):

1. The answer is read from the text after the LAST closing marker only; everything before it
   (text before an opening marker, the blocks, repeated or nested markers) is reasoning, with
   the markers replaced by line breaks. A letter inside the reasoning never counts.
2. Cut inside the reasoning -- ``truncated`` (``answer_text`` is ``""``, never parsed): an
   opening marker without a closing one after it (also one reopened after the last closing
   marker), or, under ``think-open``, no closing marker at all. Also truncated: a reply whose
   ``finish_reason`` is ``length`` with nothing after its reasoning (the budget ended before
   any answer was written).
3. A reply without any marker under a thinking style (a model that skipped thinking) is read
   whole, reasoning ``None`` -- except under ``think-open`` (rule 2).
4. ``glm``: of the text after the reasoning, the content of the last answer box when there is
   one, else of the last ``<answer>...</answer>`` (an unclosed ``<answer>``: what follows it),
   else that text itself; stray box and answer tags are removed.
5. Reasoning the server returned apart (``Generation.reasoning`` not ``None``: vLLM's and
   SGLang's reasoning parsers, ``reasoning_content``): the text is already after the reasoning,
   so it is read as rules 1-4 read the text after a closing marker (markers still inline in it,
   a server that also left ``<think>`` in the content, are split off and their reasoning joined
   to the server's); ``think-open`` is read as ``think`` there.

Pure: no torch, no transformers; a reply is a :class:`~mmspubench.eval.protocol.Generation`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mmspubench.eval.protocol import Generation

STYLES = ("none", "think", "think-open", "glm", "kimi")
"""How a family delimits its reasoning (module doc)."""

_MARKERS = {
    "think": ("<think>", "</think>"),
    "think-open": ("<think>", "</think>"),
    "glm": ("<think>", "</think>"),
    "kimi": ("◁think▷", "◁/think▷"),
}
_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL)
_GLM_TAGS = re.compile(r"<\|begin_of_box\|>|<\|end_of_box\|>|</?answer>")


@dataclass(frozen=True, slots=True)
class Split:
    """A reply as read: its reasoning, and the text its answer is read from."""

    reasoning: str | None
    """The reasoning text; ``None``: the reply had no reasoning."""
    answer_text: str
    """The text the answer is read from (after the reasoning only); ``""`` when truncated."""
    truncated: bool
    """The reasoning was cut by the token budget (module doc, rule 2): never parsed."""


def style_for(family: str | None, chat_template: str | None) -> str:
    """The style of a model: from its chat template's markers, else from its family
    (``model_type``: ``glm4v*`` -> ``glm``, ``kimi_vl`` -> ``kimi``), else ``none``. A template
    whose generation prompt writes ``<think>`` without ``</think>`` in the same string gives
    ``think-open``; the rendered prompt decides per request (:func:`style_after_prompt`)."""
    template = chat_template or ""
    name = (family or "").lower()
    if "◁think▷" in template or name.startswith("kimi"):
        return "kimi"
    if "begin_of_box" in template or name.startswith("glm4v"):
        return "glm"
    if "<think>" in template:
        generation = template[template.rfind("add_generation_prompt") :]
        literals = re.findall(r"'([^']*)'|\"([^\"]*)\"", generation)
        opens = any("<think>" in a + b and "</think>" not in a + b for a, b in literals)
        return "think-open" if opens else "think"
    return "none"


def style_after_prompt(style: str, prompt: str) -> str:
    """``think-open`` for a ``think`` reply to ``prompt`` when that rendered prompt ends inside an
    opened ``<think>`` block, ``think`` when it does not; other styles unchanged."""
    if style not in ("think", "think-open"):
        return style
    tail = prompt[prompt.rfind("<think>") :] if "<think>" in prompt else None
    return "think-open" if tail is not None and "</think>" not in tail else "think"


def split_reply(generation: Generation, style: str) -> Split:
    """The reply's reasoning and answer text under ``style`` (module doc, rules 1-5)."""
    if style not in STYLES:
        raise ValueError(f"unknown reasoning style {style!r}; expected one of {', '.join(STYLES)}")
    text = generation.text
    if style == "none":
        return Split(generation.reasoning, text.strip(), _cut(generation, text.strip(), generation.reasoning))
    opening, closing = _MARKERS[style]
    server = generation.reasoning
    starts_inside = style == "think-open" and server is None
    end = text.rfind(closing)
    if end < 0:
        if opening in text or starts_inside:
            return Split(_join(server, _unmark(text, opening, closing)), "", True)
        answer = _glm_answer(text) if style == "glm" else text.strip()
        return Split(server, answer, _cut(generation, answer, server))
    reasoning = _join(server, _unmark(text[:end], opening, closing))
    after = text[end + len(closing) :]
    if opening in after:
        return Split(_join(reasoning, _unmark(after, opening, closing)), "", True)
    answer = _glm_answer(after) if style == "glm" else after.strip()
    return Split(reasoning, answer, _cut(generation, answer, reasoning))


def after_reasoning(text: str, style: str) -> str:
    """``text`` after its reasoning as written (the answer's own tags kept, nothing trimmed): after
    the last closing marker of ``style``; the whole text under ``none`` or without one (what rule
    2 calls truncated is the caller's to tell, from :func:`split_reply`)."""
    if style == "none":
        return text
    closing = _MARKERS[style][1]
    end = text.rfind(closing)
    return text if end < 0 else text[end + len(closing) :]


def _cut(generation: Generation, answer: str, reasoning: str | None) -> bool:
    """Rule 2's last case: the budget ended after the reasoning, before any answer."""
    return reasoning is not None and not answer and generation.finish_reason == "length"


def _unmark(text: str, opening: str, closing: str) -> str:
    """The reasoning without its markers, each marker a line break (nested and repeated blocks)."""
    return re.sub(rf"\s*(?:{re.escape(opening)}|{re.escape(closing)})\s*", "\n", text).strip()


def _join(first: str | None, second: str) -> str:
    return second if first is None else "\n\n".join(part for part in (first.strip(), second) if part)


def _glm_answer(text: str) -> str:
    """Rule 4: the last box's content, else the last ``<answer>``'s, else the text; tags removed."""
    boxes = _BOX.findall(text)
    if boxes:
        return _GLM_TAGS.sub("", boxes[-1]).strip()
    answers = _ANSWER.findall(text)
    chosen = answers[-1] if answers else text
    return _GLM_TAGS.sub("", chosen).strip()
