"""A LLaVA-shaped model built offline from a config, for the scoring benchmarks.

Nothing is downloaded: the tokenizer is trained with ``tokenizers`` on the bundled model's word
corpus plus a few class-name words, the weights are random, and :func:`save_llava` writes the
folder with ``save_pretrained`` so that the benchmark loads it back exactly as a user's model is
loaded. :func:`build_llava` alone creates the model in memory on any device (the GPU script).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.eval.tiny.llava import llava_processor
from mmspubench.eval.tiny.tokenizer import CORPUS_WORDS, train_tokenizer

BENCH_WORDS: tuple[str, ...] = (
    "wooden",
    "metal",
    "plastic",
    "striped",
    "spotted",
    "golden",
    "retriever",
    "tabby",
    "persian",
    "convertible",
    "espresso",
    "maker",
    "electric",
    "acoustic",
    "guitar",
    "grand",
    "piano",
    "banana",
    "zebra",
    "tiger",
    "shark",
    "truck",
    "bottle",
    "phone",
    "beach",
    "street",
    "sunset",
    "furry",
    "tail",
)
"""Words added to the bundled corpus so that class names and attributes look like the real ones."""


@dataclass(frozen=True, slots=True)
class Shape:
    """Sizes of the vision tower and the language model."""

    image_size: int
    """Input side in pixels (the processor resizes and crops to it)."""
    patch_size: int
    """Vision patch side; image tokens = (image_size // patch_size) ** 2."""
    vision_hidden: int
    """Vision tower width."""
    vision_layers: int
    """Vision tower depth."""
    text_hidden: int
    """Language model width."""
    text_layers: int
    """Language model depth."""
    text_heads: int
    """Attention heads of the language model (key/value heads equal)."""
    intermediate: int
    """Language model MLP width."""
    vocab_size: int
    """Rows of the embedding and the output head (at least the tokenizer's size)."""


TINY = Shape(
    image_size=28,
    patch_size=14,
    vision_hidden=32,
    vision_layers=1,
    text_hidden=32,
    text_layers=2,
    text_heads=4,
    intermediate=64,
    vocab_size=1024,
)
"""Seconds to build; 4 image tokens."""

CPU_REALISTIC = Shape(
    image_size=336,
    patch_size=14,
    vision_hidden=256,
    vision_layers=4,
    text_hidden=512,
    text_layers=8,
    text_heads=8,
    intermediate=1408,
    vocab_size=32064,
)
"""LLaVA-1.5 token profile (576 image tokens, 32k vocabulary), a 42M-parameter language model."""

LLAVA_7B = Shape(
    image_size=336,
    patch_size=14,
    vision_hidden=1024,
    vision_layers=24,
    text_hidden=4096,
    text_layers=32,
    text_heads=32,
    intermediate=11008,
    vocab_size=32064,
)
"""The shape of llava-1.5-7b (CLIP ViT-L/14-336 + a 7B Llama)."""


def build_llava(
    shape: Shape, *, device: str = "cpu", dtype: str = "float32", seed: int = 0
) -> tuple[Any, Any]:
    """(model, processor) of ``shape`` with random weights, created directly on ``device`` in ``dtype``."""
    import torch
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
    )
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tokenizer = train_tokenizer(
        ["<image>", "<|im_start|>", "<|im_end|>"], words=(*CORPUS_WORDS, *BENCH_WORDS), vocab_size=900
    )
    vision = CLIPVisionConfig(
        hidden_size=shape.vision_hidden,
        intermediate_size=4 * shape.vision_hidden,
        num_hidden_layers=shape.vision_layers,
        num_attention_heads=max(1, shape.vision_hidden // 64),
        image_size=shape.image_size,
        patch_size=shape.patch_size,
        projection_dim=shape.vision_hidden,
    )
    text = LlamaConfig(
        hidden_size=shape.text_hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.text_layers,
        num_attention_heads=shape.text_heads,
        num_key_value_heads=shape.text_heads,
        vocab_size=shape.vocab_size,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),  # image_token_id is its alias
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
    )
    previous = torch.get_default_dtype()
    torch.manual_seed(seed)
    try:
        # Weights are created in their final dtype on their final device: a 7B model never
        # exists in float32 or on the host.
        torch.set_default_dtype(getattr(torch, dtype))
        with torch.device(device):
            model = LlavaForConditionalGeneration(config).eval()
    finally:
        torch.set_default_dtype(previous)
    side = shape.image_size
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": side}, crop_size={"height": side, "width": side}
    )
    processor = llava_processor(tokenizer, image_processor, shape.patch_size)
    return model, processor


def save_llava(folder: Path, shape: Shape, seed: int = 0) -> Path:
    """Build a float32 model of ``shape`` on the CPU and write it with its processor to ``folder``."""
    if not (folder / "config.json").is_file():
        model, processor = build_llava(shape, seed=seed)
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
    return folder
