"""Tiny randomly initialised vision-language models of several families, built offline for tests.

Each builder writes a model + processor (trained tokenizer, PIL image processor, chat template) with
``save_pretrained``; tests load them back through ``load_model(folder)`` exactly as a Hub model.
Use :func:`tiny_model_dir` with the session-scoped ``session_cache`` fixture so each family is
built once per test session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from mmspubench.eval.tiny.llava import build_tiny_llava
from mmspubench.eval.tiny.tokenizer import train_tokenizer
from PIL import Image
from transformers import PreTrainedModel, PreTrainedTokenizerBase

FAMILIES = ("llava", "qwen2_vl", "idefics3", "gemma3")
"""Families with a tiny builder; every adapter/scoring test runs over all of them."""

_SEED = 7

QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

# Gemma 3 style: BOS written by the template itself, system text folded into the first user turn.
GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% set sys = namespace(text='') %}"
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{% set sys.text = message['content'][0]['text'] + '\n\n' %}{% else %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% if message['role'] == 'user' %}{{ sys.text }}{% endif %}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<start_of_image>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}<end_of_turn>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


_SIGLIP_VISION: dict[str, Any] = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": 32,
    "patch_size": 8,
}
"""The SigLIP-like vision tower shared by the tiny Idefics3 and Gemma 3 (copied per use: configs may mutate it)."""


def _text_config(tokenizer: PreTrainedTokenizerBase, eos_token: str, **family: Any) -> dict[str, Any]:
    """The tiny decoder every family shares (32 wide, 2 layers, 2 heads); ``family`` adds its own keys."""
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": 512,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.convert_tokens_to_ids(eos_token),
        **family,
    }


def _seeded_model(factory: Callable[[], PreTrainedModel]) -> PreTrainedModel:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_SEED)
        return factory().eval()


def build_llava(folder: Path) -> Path:
    """Tiny LLaVA: CLIP-like tower (16 image tokens), Llama LM, tokenizer that prepends BOS."""
    return build_tiny_llava(folder, seed=_SEED)


def build_qwen2_vl(folder: Path) -> Path:
    """Tiny Qwen2-VL: 3-D rotary positions, dynamic image grid, no BOS, no video processor."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = train_tokenizer(
        [
            "<|im_start|>",
            "<|im_end|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|image_pad|>",
            "<|video_pad|>",
        ],
        add_bos=False,
    )
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=16 * 16, max_pixels=64 * 64, patch_size=8, merge_size=2, temporal_patch_size=2
    )
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen2VLConfig(
        text_config=_text_config(
            tokenizer,
            "<|im_end|>",
            num_key_value_heads=1,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        ),
        vision_config={
            "depth": 2,
            "embed_dim": 32,
            "hidden_size": 32,
            "num_heads": 2,
            "patch_size": 8,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
    )
    model = _seeded_model(lambda: Qwen2VLForConditionalGeneration(config))
    model.save_pretrained(folder)
    # The stock processor cannot be built without torchvision (its video part): save its image and
    # text parts and the template file, the layout of a Hub Qwen2-VL folder.
    image_processor.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(QWEN_TEMPLATE, encoding="utf-8")
    return folder


def build_idefics3(folder: Path) -> Path:
    """Tiny Idefics3 (SmolVLM's architecture): image split into crops + global view, pixel shuffle."""
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    row_col = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    tokenizer = train_tokenizer(
        [
            "<|im_start|>",
            "<fake_token_around_image>",
            "<image>",
            "<end_of_utterance>",
            "<global-img>",
            *row_col,
        ]
    )
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, do_image_splitting=True
    )
    processor = Idefics3Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_len=4, chat_template=IDEFICS3_TEMPLATE
    )
    config = Idefics3Config(
        vision_config=dict(_SIGLIP_VISION),
        text_config=_text_config(tokenizer, "<end_of_utterance>", model_type="llama", num_key_value_heads=2),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        scale_factor=2,
        pad_token_id=tokenizer.pad_token_id,  # type: ignore[call-arg]  # a PreTrainedConfig keyword
    )
    model = _seeded_model(lambda: Idefics3ForConditionalGeneration(config))
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def build_gemma3(folder: Path) -> Path:
    """Tiny Gemma 3: SigLIP tower pooled to 4 tokens, BOS in the template, bidirectional image block."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tokenizer = train_tokenizer(
        ["<start_of_turn>", "<end_of_turn>"],
        named_special={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
        bos="<bos>",
        eos="<eos>",
    )
    image_processor = Gemma3ImageProcessorPil(size={"height": 32, "width": 32})
    processor = Gemma3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        chat_template=GEMMA3_TEMPLATE,
        image_seq_length=4,
    )
    ids = tokenizer.convert_tokens_to_ids
    config = Gemma3Config(
        text_config=_text_config(
            tokenizer,
            "<end_of_turn>",
            num_key_value_heads=1,
            head_dim=16,
            query_pre_attn_scalar=16,
            sliding_window=512,  # longer than any test prompt, as a real Gemma 3 window (1024) is
            final_logit_softcapping=30.0,
        ),
        vision_config=dict(_SIGLIP_VISION),
        mm_tokens_per_image=4,
        boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"),
    )
    model = _seeded_model(lambda: Gemma3ForConditionalGeneration(config))
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "llava": build_llava,
    "qwen2_vl": build_qwen2_vl,
    "idefics3": build_idefics3,
    "gemma3": build_gemma3,
}


def tiny_model_dir(family: str, root: Path) -> Path:
    """Folder of the tiny ``family`` model under ``root``, built on first request."""
    folder = root / f"tiny-{family}"
    if not (folder / "config.json").is_file():
        BUILDERS[family](folder)
    return folder


def make_image(seed: int, size: tuple[int, int] = (48, 40)) -> Image.Image:
    """A small deterministic RGB image (a two-colour block pattern that depends on ``seed``)."""
    width, height = size
    image = Image.new("RGB", size, (20 * seed % 256, 90, 200 - 10 * seed % 200))
    block = Image.new("RGB", (width // 2, height // 2), (250, (37 * seed) % 256, 10))
    image.paste(block, ((seed * 5) % (width // 2), (seed * 3) % (height // 2)))
    return image
