"""Family quirks of vision-language models, kept as small named hooks.

The adapter is generic: it talks to ``AutoProcessor`` and ``AutoModelForImageTextToText`` and the
model's own chat template. The few places where a family needs something else live here, each as
a named function, chosen by the config's ``model_type`` in :func:`hooks_for`:

- ``load_processor``: how the processor is built. Qwen2-VL's processor carries a video processor
  that needs torchvision; :func:`load_processor_without_video` builds the same processor with only
  its image and text parts.
- ``position_ids``: explicit position ids for a forward pass. Qwen2-VL uses 3-D (temporal, height,
  width) rotary positions whose text part continues after the image grid; the model would otherwise
  infer them from state kept between calls, so :func:`mrope_position_ids` computes them with the
  model's own ``get_rope_index``. Other families return ``None``: positions ``0..n-1`` of each row,
  the model's default (rows are padded on the right, so this is exact).
- ``user_content``: the user turn given to the chat template (image placement).
"""

from __future__ import annotations

import json
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


def default_position_ids(model: Any, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
    """No explicit positions: the model numbers each (right-padded) row ``0..n-1`` itself."""
    return None


def mrope_position_ids(model: Any, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Qwen2-VL's 3-D rotary positions ``(3, batch, seq)`` from the model's ``get_rope_index``.

    Passing them explicitly keeps each forward pass independent of the ``rope_deltas`` the model
    caches between calls.
    """
    base = model.model
    position_ids, _ = base.get_rope_index(
        inputs["input_ids"],
        mm_token_type_ids=inputs["mm_token_type_ids"],
        image_grid_thw=inputs.get("image_grid_thw"),
        attention_mask=inputs.get("attention_mask"),
    )
    return position_ids


def read_chat_template(folder: Path) -> str | None:
    """The chat template saved in ``folder`` (``chat_template.jinja``/``.json`` or processor config)."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    for name in ("chat_template.json", "processor_config.json"):
        path = folder / name
        if path.is_file():
            template = json.loads(path.read_text(encoding="utf-8")).get("chat_template")
            if isinstance(template, str):
                return template
    return None


def load_processor_auto(folder: Path, trust_remote_code: bool) -> Any:
    """``AutoProcessor.from_pretrained(folder)``."""
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(folder, trust_remote_code=trust_remote_code)


def load_processor_without_video(folder: Path, trust_remote_code: bool) -> Any:
    """Qwen2-VL's processor built from its image processor and tokenizer only.

    The stock processor also loads a video processor, which needs torchvision; images never need it.
    """
    from transformers import AutoImageProcessor, AutoTokenizer
    from transformers.models.qwen2_vl.processing_qwen2_vl import Qwen2VLProcessor
    from transformers.processing_utils import ProcessorMixin

    class Qwen2VLImageProcessorOnly(Qwen2VLProcessor):
        """Qwen2-VL's processor without the video part (attributes: image processor, tokenizer)."""

        def __init__(
            self, image_processor: Any = None, tokenizer: Any = None, chat_template: Any = None
        ) -> None:
            self.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
            self.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

    image_processor = AutoImageProcessor.from_pretrained(folder, trust_remote_code=trust_remote_code)
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    template = read_chat_template(folder) or tokenizer.chat_template
    return Qwen2VLImageProcessorOnly(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=template
    )


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


_MROPE_FAMILIES = ("qwen2_vl", "qwen2_5_vl")


def hooks_for(model_type: str) -> FamilyHooks:
    """The hooks for a config ``model_type``; unknown families get the generic ones."""
    if model_type in _MROPE_FAMILIES:
        return FamilyHooks(model_type, load_processor_without_video, mrope_position_ids, image_then_text)
    return FamilyHooks(model_type, load_processor_auto, default_position_ids, image_then_text)
