"""Family quirks of vision-language models, kept as small named hooks.

The adapter is generic: it talks to ``AutoProcessor`` and ``AutoModelForImageTextToText`` and the
model's own chat template. The few places where a family needs something else live here, each as
a named function, chosen by the config's ``model_type`` in :func:`hooks_for`:

- ``load_processor``: how the processor is built: the folder's processor class without its video
  part (video processors need torchvision; see :mod:`mmspubench.eval.checkpoint.families`).
- ``position_ids``: explicit position ids for a forward pass. Families with 3-D (temporal, height,
  width) rotary positions (Qwen2-VL and its successors, GLM-4V) number text after an image from
  the image grid; the model would otherwise infer them from state kept between calls, so
  :func:`rope_index_position_ids` computes them with the model's own ``get_rope_index``. Other
  families return ``None``: positions ``0..n-1`` of each row, the model's default (rows are padded
  on the right, so this is exact).
- ``user_content``: the user turn given to the chat template (image placement).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

SEQUENCE_KEYS = frozenset(
    {"input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids", "cross_attention_mask"}
)
"""Processor outputs with one entry per token (shape ``(batch, seq, ...)``, e.g. Mllama's
``cross_attention_mask``): padded, cut and sliced along the sequence axis. Every other output is
image data, batched by concatenating along the first axis."""


def image_then_text(text: str) -> list[dict[str, str]]:
    """The default user turn: the image first, then the text (the layout of g(t))."""
    return [{"type": "image"}, {"type": "text", "text": text}]


def rope_index_position_ids(model: Any, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
    """Multimodal rotary positions from the model's own ``get_rope_index`` where it has one, else ``None``.

    Families with 3-D (temporal, height, width) rotary positions (Qwen2/2.5/3-VL, GLM-4V, ...) number
    text after an image from the image grid; the model would otherwise infer the positions from
    state kept between calls (``rope_deltas``). Passing them explicitly keeps every forward pass
    independent. The keyword arguments ``get_rope_index`` takes are read from its signature.
    """
    import inspect

    get_rope_index = getattr(getattr(model, "model", None), "get_rope_index", None)
    if get_rope_index is None:
        return None
    accepted = inspect.signature(get_rope_index).parameters
    kwargs = {k: v for k, v in inputs.items() if k in accepted and k != "input_ids"}
    position_ids, _ = get_rope_index(inputs["input_ids"], **kwargs)
    return position_ids


@dataclass(frozen=True, slots=True)
class FamilyHooks:
    """The family-specific steps of the adapter; everything else is generic."""

    name: str
    """Family name recorded in ``ModelInfo.adapter``, e.g. ``llava`` or ``qwen2_vl``."""
    load_processor: Callable[[Path, bool], Any]
    """Builds the processor from the model folder (arguments: folder, trust_remote_code)."""
    position_ids: Callable[[Any, Mapping[str, torch.Tensor]], torch.Tensor | None]
    """Explicit position ids for a batch of processor outputs, or ``None`` for the model's default."""
    user_content: Callable[[str], list[dict[str, str]]]
    """The user turn's content list for the chat template, given the user text."""


def hooks_for(model_type: str) -> FamilyHooks:
    """The hooks for a config ``model_type``: the same generic steps for every family.

    The processor is built without a video part (:func:`mmspubench.eval.checkpoint.families.load_processor`)
    and positions come from the model's ``get_rope_index`` where it has one.
    """
    from mmspubench.eval.checkpoint.families import load_processor

    return FamilyHooks(
        model_type,
        functools.partial(load_processor, model_type=model_type),
        rope_index_position_ids,
        image_then_text,
    )
