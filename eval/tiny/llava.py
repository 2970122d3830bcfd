"""The one tiny LLaVA builder: sizes, tokenizer, processor and randomly initialised model.

A CLIP-style vision tower, the LLaVA projector and a Llama language model, with a byte-level BPE
tokenizer (``mmspubench.eval.tiny.tokenizer``) and the bundled chat template, so that prompts render
exactly as they do for the bundled model. It makes the random model of the test suite and of
``bundled.random_model_dir`` (:func:`build_tiny_llava`, :data:`RANDOM_ARCH`) and the starting point
of training (``mmspubench.eval.tiny.train``: tokenizer trained on the training texts' words).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import Item
from mmspubench.eval import prompts
from mmspubench.eval.bundled import BUNDLED_SEED
from mmspubench.eval.tiny.examples import REASONING
from mmspubench.eval.tiny.tokenizer import (
    END_OF_TURN,
    IMAGE_TOKEN,
    THINK_MARKERS,
    TINY_CHAT_TEMPLATE,
    bundled_corpus_words,
    train_tokenizer,
)

if TYPE_CHECKING:
    from transformers import LlavaForConditionalGeneration, LlavaProcessor


@dataclass(frozen=True, slots=True)
class Architecture:
    """Sizes of the tiny LLaVA (CLIP vision tower + projector + Llama language model)."""

    image_size: int = 64
    """Side of the square input image in pixels."""
    patch_size: int = 16
    """Vision patch side; (image_size / patch_size)**2 image tokens per image (16 at the defaults).
    A run with 8-pixel patches (64 image tokens, 1500 steps in the same time) did not help the
    balanced model recognise the objects either."""
    vision_hidden: int = 64
    """Hidden size of the vision tower."""
    vision_layers: int = 2
    """Transformer layers of the vision tower."""
    text_hidden: int = 128
    """Hidden size of the language model."""
    text_layers: int = 2
    """Transformer layers of the language model."""
    heads: int = 4
    """Attention heads of the language model (the vision tower uses half as many)."""
    vocab_size: int = 2000
    """Target vocabulary size of the byte-level BPE tokenizer: large enough that every word of the
    prompts and of the synthetic vocabulary becomes one token (sequences half as long as at 800)."""
    vision_heads: int | None = None
    """Attention heads of the vision tower; ``None``: half the language model's."""
    max_positions: int = 1024
    """Longest sequence the language model takes."""

    @property
    def vision_head_count(self) -> int:
        """Attention heads of the vision tower."""
        return self.vision_heads if self.vision_heads is not None else max(1, self.heads // 2)


RANDOM_ARCH = Architecture(
    image_size=32,
    patch_size=8,
    vision_hidden=32,
    text_hidden=32,
    heads=2,
    vision_heads=2,
    vocab_size=1000,
    max_positions=512,
)
"""Sizes of the tiny random model (tests, ``bundled.random_model_dir``): 16 image tokens, 32 wide."""


def corpus_words(items: Sequence[Item], extra: Sequence[str] = ()) -> list[str]:
    """Words the tokenizer learns whole: the prompt templates', every text field's of the items and
    those of the ``extra`` texts (the thinking control's reasoning)."""
    texts = [json.dumps(prompts.prompt_spec()), "A B C D Answer:", *extra]
    for item in items:
        texts += [
            item.question,
            *item.options,
            item.class_name,
            *item.core_attributes,
            *item.spurious_attributes,
        ]
    words = {w for text in texts for w in re.findall(r"[A-Za-z]+|[0-9]+|[^\sA-Za-z0-9]", text)}
    return sorted(words)


def build_tokenizer(items: Sequence[Item], vocab_size: int, reasoning: bool = False) -> Any:
    """Byte-level BPE made the way the bundled model's is, but trained on the training texts' words;
    ``reasoning``: the reasoning markers are special tokens too and the reasoning's words learned."""
    specials = [IMAGE_TOKEN, "<|im_start|>", END_OF_TURN, *(THINK_MARKERS if reasoning else ())]
    extra = [REASONING.format(decoy="A")] if reasoning else []
    return train_tokenizer(specials, vocab_size=vocab_size, words=corpus_words(items, extra))


def build_processor(
    tokenizer: Any, arch: Architecture, chat_template: str = TINY_CHAT_TEMPLATE
) -> LlavaProcessor:
    """LLaVA processor: fixed-size resize, CLIP normalisation, one image token per patch."""
    from transformers import CLIPImageProcessorPil

    side = {"height": arch.image_size, "width": arch.image_size}
    images = CLIPImageProcessorPil(size=side, crop_size=side, do_center_crop=False, do_resize=True)
    return llava_processor(tokenizer, images, arch.patch_size, chat_template)


def llava_processor(
    tokenizer: Any, images: Any, patch_size: int, chat_template: str = TINY_CHAT_TEMPLATE
) -> LlavaProcessor:
    """A LLaVA processor over ``images`` (an image processor) with ``chat_template`` (the bundled
    one by default); the vision tower's CLS feature is dropped ("default" strategy) and counted
    (one additional token)."""
    from transformers import LlavaProcessor

    return LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=chat_template,
    )


def build_model(tokenizer: Any, arch: Architecture, seed: int) -> LlavaForConditionalGeneration:
    """A randomly initialised tiny LLaVA whose vocabulary is the tokenizer's."""
    import torch
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    vision = CLIPVisionConfig(
        image_size=arch.image_size,
        patch_size=arch.patch_size,
        hidden_size=arch.vision_hidden,
        intermediate_size=2 * arch.vision_hidden,
        num_hidden_layers=arch.vision_layers,
        num_attention_heads=arch.vision_head_count,
        projection_dim=arch.vision_hidden,
    )
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in (IMAGE_TOKEN, END_OF_TURN)}
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=arch.text_hidden,
        intermediate_size=2 * arch.text_hidden,
        num_hidden_layers=arch.text_layers,
        num_attention_heads=arch.heads,
        num_key_value_heads=arch.heads,
        max_position_embeddings=arch.max_positions,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=ids[IMAGE_TOKEN],
        image_seq_length=(arch.image_size // arch.patch_size) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    # Stop at the end of the assistant turn (what the model learns after the letter) or at EOS.
    model.generation_config.eos_token_id = [ids[END_OF_TURN], tokenizer.eos_token_id]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.do_sample = False
    return model


def save_tiny_llava(
    folder: Path, tokenizer: Any, arch: Architecture, seed: int, chat_template: str = TINY_CHAT_TEMPLATE
) -> Path:
    """Write the random tiny LLaVA of ``arch`` (weights from ``seed``) with its processor to ``folder``."""
    build_model(tokenizer, arch, seed).save_pretrained(folder)
    build_processor(tokenizer, arch, chat_template).save_pretrained(folder)
    return folder


def build_tiny_llava(
    folder: Path,
    *,
    seed: int = BUNDLED_SEED,
    arch: Architecture = RANDOM_ARCH,
    words: Sequence[str] | None = None,
) -> Path:
    """Write a tiny random LLaVA with processor to ``folder`` (deterministic for a seed).

    The tokenizer is trained on ``words`` (default: ``tokenizer.bundled_corpus_words()``).
    """
    tokenizer = train_tokenizer(
        [IMAGE_TOKEN, "<|im_start|>", END_OF_TURN],
        vocab_size=arch.vocab_size,
        words=bundled_corpus_words() if words is None else words,
    )
    return save_tiny_llava(Path(folder), tokenizer, arch, seed)
