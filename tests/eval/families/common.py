"""Shared pieces of the tiny family builders: tokenizer, decoder and vision-tower sizes, templates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from mmspubench.eval.tiny.tokenizer import train_tokenizer
from transformers import PreTrainedTokenizerBase

SEED = 7
PINPOINTS = [[32, 32], [32, 64], [64, 32]]
"""Any-resolution grid of the LLaVA-NeXT-style families (base view + up to 2 tiles)."""


def chatml_template(image_text: str, bos: str = "") -> str:
    """A ChatML chat template whose image entry renders as ``image_text`` (the family's placeholder)."""
    return (
        bos + "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{% if message['content'] is string %}{{ message['content'] }}"
        "{% else %}{% for item in message['content'] %}"
        "{% if item['type'] == 'image' %}" + image_text + "{% elif item['type'] == 'text' %}"
        "{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


def tokenizer(
    extra: Sequence[str] = (),
    *,
    named: dict[str, str] | None = None,
    add_bos: bool = False,
    bos: str = "<s>",
    eos: str = "</s>",
) -> PreTrainedTokenizerBase:
    """A trained byte-level BPE tokenizer with the ChatML markers and the family's special tokens."""
    return train_tokenizer(
        ["<|im_start|>", "<|im_end|>", *extra], named_special=named, add_bos=add_bos, bos=bos, eos=eos
    )


def token_id(tok: PreTrainedTokenizerBase, token: str) -> int:
    """The id of one token (``convert_tokens_to_ids`` typed for a single token)."""
    return int(tok.convert_tokens_to_ids(token))  # type: ignore[arg-type]


def text_config(tok: PreTrainedTokenizerBase, eos_token: str = "<|im_end|>", **family: Any) -> dict[str, Any]:
    """The tiny decoder (32 wide, 2 layers, 2 heads, 1 KV head); ``family`` adds or overrides keys."""
    return {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "max_position_embeddings": 1024,
        "pad_token_id": tok.pad_token_id,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": token_id(tok, eos_token),
        **family,
    }


def clip_vision(image_size: int = 32, patch_size: int = 8, **extra: Any) -> dict[str, Any]:
    """A CLIP-like vision tower (``model_type`` clip_vision_model): the SigLIP sizes plus a projection."""
    tower = siglip_vision(image_size, patch_size, projection_dim=32, **extra)
    return {**tower, "model_type": "clip_vision_model"}


def siglip_vision(image_size: int = 32, patch_size: int = 8, **extra: Any) -> dict[str, Any]:
    """A SigLIP-like vision tower (``model_type`` siglip_vision_model)."""
    return {
        "model_type": "siglip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": image_size,
        "patch_size": patch_size,
        **extra,
    }


def llava_processor_kwargs(tok: PreTrainedTokenizerBase) -> dict[str, Any]:
    """What every LLaVA-style processor takes besides its image processor: 8-pixel patches, the CLS
    feature dropped ("default" strategy) and counted (one additional token), ``<image>`` then a line."""
    return {
        "tokenizer": tok,
        "patch_size": 8,
        "vision_feature_select_strategy": "default",
        "num_additional_image_tokens": 1,
        "chat_template": chatml_template("<image>\n"),
    }


def llava_next_images() -> Any:
    """LLaVA-NeXT's image processor on the tiny grid (32-pixel base view, :data:`PINPOINTS` tiles)."""
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    return LlavaNextImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}, image_grid_pinpoints=PINPOINTS
    )


def llava_next_config_kwargs(tok: PreTrainedTokenizerBase) -> dict[str, Any]:
    """The config of a LLaVA-NeXT-shaped model: CLIP tower, Llama decoder, any-resolution grid."""
    return {
        "vision_config": clip_vision(),
        "text_config": text_config(tok, model_type="llama"),
        "image_token_index": token_id(tok, "<image>"),
        "image_grid_pinpoints": PINPOINTS,
        "vision_feature_select_strategy": "default",
        "vision_feature_layer": -1,
    }


def save(folder: Path, factory: Callable[[], torch.nn.Module], processor: Any) -> Path:
    """Build the model with a fixed seed, save it and the processor to ``folder``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model: Any = factory()
        model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
