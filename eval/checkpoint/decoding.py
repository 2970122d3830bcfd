"""Generated token ids -> :class:`~mmspubench.eval.protocol.Generation`, as the transformers and
vLLM engines both decode them.

A reply is decoded without special tokens, as it always was, except for the reasoning and answer
markers (:data:`MARKERS`): a marker the tokenizer holds as one special token (``<think>`` in some
tokenizers, GLM's ``<|begin_of_box|>``) would be dropped by ``skip_special_tokens`` and the reply
could no longer be split. So the ids are cut at those marker tokens only, each piece decoded as
before, and the markers written back between them. A tokenizer without such a marker decodes
exactly as before (one piece), so the replies of models without reasoning are unchanged byte for
byte; pad, end-of-sequence and end-of-turn tokens are still dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mmspubench.eval.protocol import Generation

MARKERS = (
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "<|begin_of_box|>",
    "<|end_of_box|>",
    "◁think▷",
    "◁/think▷",
)
"""The reasoning and answer markers of every reasoning style (``eval/replies/reasoning.py``)."""
CLOSING = ("</think>", "◁/think▷")
"""The markers that end a reasoning block (the reasoning's tokens are those up to the last one)."""


def _single_id(tokenizer: Any, marker: str) -> int | None:
    """The id of ``marker`` when the tokenizer holds it as ONE token, else ``None``."""
    ids = tokenizer.convert_tokens_to_ids([marker])
    token = ids[0] if ids else None
    if not isinstance(token, int) or token < 0 or token == getattr(tokenizer, "unk_token_id", None):
        return None
    return token if tokenizer.decode([token], skip_special_tokens=False) == marker else None


def marker_ids(tokenizer: Any) -> dict[int, str]:
    """The markers that are single tokens of ``tokenizer``, by id (found once per model)."""
    found = {}
    for marker in MARKERS:
        token = _single_id(tokenizer, marker)
        if token is not None:
            found[token] = marker
    return found


def lost_markers(tokenizer: Any, markers: dict[int, str]) -> dict[int, str]:
    """Of ``markers``, those that decoding without special tokens drops (the ones kept by hand)."""
    return {t: m for t, m in markers.items() if tokenizer.decode([t], skip_special_tokens=True) == ""}


def decode_keeping(tokenizer: Any, ids: Sequence[int], lost: dict[int, str]) -> str:
    """``ids`` decoded without special tokens, except the marker tokens of ``lost``, written back
    where they stood (module doc)."""
    pieces: list[str] = []
    start = 0
    for index, token in enumerate(ids):
        if token in lost:
            pieces.append(tokenizer.decode(list(ids[start:index]), skip_special_tokens=True))
            pieces.append(lost[token])
            start = index + 1
    pieces.append(tokenizer.decode(list(ids[start:]), skip_special_tokens=True))
    return "".join(pieces)


def generation_of(
    ids: Sequence[int],
    text: str,
    stops: set[int],
    max_new_tokens: int,
    prompt_tokens: int | None,
    closing: set[int],
) -> Generation:
    """One reply from its generated ``ids`` (pad after the end, if any, included) decoded as
    ``text`` (all of the ids, as before): the ids up to and including the first of ``stops`` are its completion;
    ``length`` when the budget was spent without a stop token; its reasoning tokens are those up
    to the last ``closing`` marker token (``None`` when none is in it)."""
    ids = list(ids)
    end = next((i for i, t in enumerate(ids) if t in stops), None)
    completion = ids if end is None else ids[: end + 1]
    finish = "length" if end is None and len(completion) >= max_new_tokens else "stop"
    ends = [i for i, t in enumerate(completion) if t in closing]
    return Generation(
        text=text,
        finish_reason=finish,
        prompt_tokens=prompt_tokens,
        completion_tokens=len(completion),
        reasoning_tokens=ends[-1] + 1 if ends else None,
    )


class ReplyDecoder:
    """How one model's replies are decoded (the markers it must keep found once, when built)."""

    def __init__(self, processor: Any, stops: Sequence[int]) -> None:
        tokenizer = getattr(processor, "tokenizer", processor)
        markers = marker_ids(tokenizer)
        self.processor = processor
        """The processor (or tokenizer) whose ``batch_decode`` decodes a reply without markers."""
        self.tokenizer = tokenizer
        """Its tokenizer, which decodes the pieces between kept markers."""
        self.lost = lost_markers(tokenizer, markers)
        """Marker tokens that ``skip_special_tokens`` would drop, by id: kept by hand."""
        self.closing = {t for t, m in markers.items() if m in CLOSING}
        """Ids of the single-token closing markers (to count the reasoning's tokens)."""
        self.stops = set(stops)
        """End-of-sequence ids: a reply that reached one stopped on its own."""

    def decode(self, rows: Sequence[Sequence[int]]) -> list[str]:
        """Each row of generated ids as text: exactly as before for a tokenizer without lost
        markers (one ``batch_decode`` without special tokens), else with its markers kept."""
        if not self.lost:
            return [str(t) for t in self.processor.batch_decode(rows, skip_special_tokens=True)]
        return [decode_keeping(self.tokenizer, row, self.lost) for row in rows]

    def generations(
        self,
        rows: Sequence[Sequence[int]],
        max_new_tokens: int,
        prompt_tokens: Sequence[int | None],
        seconds: float | None,
    ) -> list[Generation]:
        """The replies of one batch, its ``seconds`` divided evenly among them."""
        share = None if seconds is None or not rows else seconds / len(rows)
        return [
            dataclasses.replace(
                generation_of(row, text, self.stops, max_new_tokens, prompt, self.closing), seconds=share
            )
            for row, text, prompt in zip(rows, self.decode(rows), prompt_tokens, strict=True)
        ]


def stop_ids(generation_config: Any, tokenizer: Any) -> list[int]:
    """The end-of-sequence ids generation stops at: the generation config's, else the tokenizer's."""
    eos = getattr(generation_config, "eos_token_id", None)
    if eos is None:
        eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        return []
    return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]


def chat_template_of(processor: Any) -> str | None:
    """The processor's chat template text (its tokenizer's when it has none; several named
    templates joined, so that the markers of any of them are seen)."""
    template = getattr(processor, "chat_template", None)
    if template is None:
        template = getattr(getattr(processor, "tokenizer", None), "chat_template", None)
    if isinstance(template, dict):
        return "\n".join(str(t) for t in template.values())
    return template if isinstance(template, str) else None
