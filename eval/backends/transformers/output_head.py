"""The output head as the model's own forward applies it, found by a probe when the model is loaded.

The fast scorer's suffix pass runs the inner model (``model.model``) and computes the logits of the
positions it needs itself, so it must apply the head exactly as the model's ``forward`` does. For most
families that is the output embeddings alone; some scale them (Cohere's ``logit_scale``, which Aya
Vision's forward applies from transformers 5.25 on and not before) or cap them. Which one a model's
forward applies depends on the family and on the transformers version, so it is not looked up but
measured: a short text-only sequence runs through ``model.model`` and through ``model``, and each
known head (:data:`CANDIDATES`) is applied to the inner model's last hidden states; the one equal to
the forward's logits is used. When none is, the fast scorer is not exact for the model and the
adapter scores it plain, with :data:`HEAD_NOT_REPRODUCED` as the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["HEAD_NOT_REPRODUCED", "OutputHead", "probe_head"]

HEAD_NOT_REPRODUCED = (
    "the model's forward transforms its output head's logits in a way the fast scorer does not reproduce"
)
"""Reason given when no known head gives the forward's logits."""

TOLERANCE = 1e-4
"""Largest difference, in log-probability, between a head's and the forward's log-softmax."""

PROBE_TEXT = "A photo of a small red kite above the grass"
"""Text of the probe sequence (ordinary tokens: no image placeholder)."""


@dataclass(frozen=True, slots=True)
class OutputHead:
    """A way of turning the last hidden states into logits."""

    name: str
    """``embeddings`` (the output embeddings alone), ``logit_scale`` or ``softcap``."""
    apply: Callable[[Any, Any], Any]
    """``apply(model, hidden) -> logits``."""


def _embeddings(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    return model.get_output_embeddings()(hidden)


def _logit_scale(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    return _embeddings(model, hidden) * model.config.get_text_config().logit_scale


def _softcap(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    import torch

    cap = model.config.get_text_config().final_logit_softcapping
    return torch.tanh(_embeddings(model, hidden) / cap) * cap


CANDIDATES: tuple[tuple[OutputHead, Callable[[Any], bool]], ...] = (
    (OutputHead("embeddings", _embeddings), lambda text: True),
    (
        OutputHead("logit_scale", _logit_scale),
        lambda text: getattr(text, "logit_scale", None) not in (None, 1, 1.0),
    ),
    (
        OutputHead("softcap", _softcap),
        lambda text: bool(getattr(text, "final_logit_softcapping", None)),
    ),
)
"""Known heads, each with the test of the text config under which it can apply."""


def probe_head(model: Any, tokenizer: Any) -> OutputHead | None:
    """The head whose logits equal ``model``'s forward on :data:`PROBE_TEXT`, or ``None``."""
    import torch

    text = model.config.get_text_config()
    ids = tokenizer(PROBE_TEXT, return_tensors="pt")["input_ids"].to(model.device)
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        full = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float().log_softmax(-1)
        hidden = model.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        for head, applies in CANDIDATES:
            if not applies(text):
                continue
            mine = head.apply(model, hidden).float().log_softmax(-1)
            if mine.shape == full.shape and float((mine - full).abs().max()) <= TOLERANCE:
                return head
    return None
