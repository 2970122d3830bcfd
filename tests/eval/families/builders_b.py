"""Tiny builders: Qwen-VL successors, GLM-4V, Idefics 2, SmolVLM, InternVL, GOT-OCR2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmspubench.eval.checkpoint.families import without_video

from tests.eval.families.common import (
    chatml_template,
    save,
    siglip_vision,
    text_config,
    token_id,
    tokenizer,
)

QWEN_IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
QWEN_SPECIALS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def _qwen_images(patch: int = 8) -> Any:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    side = patch * 2
    return Qwen2VLImageProcessorPil(
        min_pixels=side * side,
        max_pixels=4 * side * side,
        patch_size=patch,
        merge_size=2,
        temporal_patch_size=2,
    )


def _qwen_ids(tok: Any) -> dict[str, Any]:
    return {
        "image_token_id": token_id(tok, "<|image_pad|>"),
        "video_token_id": token_id(tok, "<|video_pad|>"),
        "vision_start_token_id": token_id(tok, "<|vision_start|>"),
        "vision_end_token_id": token_id(tok, "<|vision_end|>"),
    }


def _qwen_processor(cls: type, tok: Any, patch: int = 8) -> Any:
    return without_video(cls)(
        image_processor=_qwen_images(patch), tokenizer=tok, chat_template=chatml_template(QWEN_IMAGE)
    )


QWEN3_ROPE = {
    "rope_type": "default",
    "rope_theta": 10000.0,
    "mrope_section": [2, 3, 3],
    "mrope_interleaved": True,
}
"""Qwen3-VL's interleaved 3-D rotary positions (time, height, width sections of the 8 rotary pairs)."""
QWEN_VISION = {"depth": 2, "hidden_size": 32, "num_heads": 2, "patch_size": 8, "spatial_merge_size": 2}


def build_qwen2_5_vl(folder: Path) -> Path:
    """Qwen2.5-VL: windowed vision attention, 3-D rotary positions (as Qwen2-VL)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

    tok = tokenizer(QWEN_SPECIALS)
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}
    config = Qwen2_5_VLConfig(
        text_config=text_config(tok, rope_parameters=rope),
        vision_config={
            **QWEN_VISION,
            "intermediate_size": 64,
            "out_hidden_size": 32,
            "window_size": 32,
            "fullatt_block_indexes": [1],
            "temporal_patch_size": 2,
        },
        **_qwen_ids(tok),
    )
    return save(
        folder, lambda: Qwen2_5_VLForConditionalGeneration(config), _qwen_processor(Qwen2_5_VLProcessor, tok)
    )


def build_qwen3_vl(folder: Path) -> Path:
    """Qwen3-VL: interleaved 3-D rotary positions, deepstack visual features in early decoder layers."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    return qwen3_vl_like(folder, Qwen3VLConfig, Qwen3VLForConditionalGeneration)


def qwen3_vl_like(folder: Path, config_cls: Any, model_cls: Any, **text_extra: Any) -> Path:
    """A Qwen3-VL-shaped model of ``config_cls``/``model_cls`` (``text_extra``: e.g. MoE sizes)."""
    from transformers import Qwen3VLProcessor

    tok = tokenizer(QWEN_SPECIALS)
    config = config_cls(
        text_config=text_config(tok, rope_parameters=dict(QWEN3_ROPE), **text_extra),
        vision_config={
            **QWEN_VISION,
            "intermediate_size": 64,
            "out_hidden_size": 32,
            "num_position_embeddings": 16,
            "deepstack_visual_indexes": [0],
            "temporal_patch_size": 2,
        },
        **_qwen_ids(tok),
    )
    return save(folder, lambda: model_cls(config), _qwen_processor(Qwen3VLProcessor, tok))


def build_qwen3_5(folder: Path) -> Path:
    """Qwen3.5: Qwen3-VL's vision side, a decoder mixing linear (recurrent) and full attention layers."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    return qwen3_5_like(folder, Qwen3_5Config, Qwen3_5ForConditionalGeneration)


def qwen3_5_like(folder: Path, config_cls: Any, model_cls: Any, **text_extra: Any) -> Path:
    """A Qwen3.5-shaped model of ``config_cls``/``model_cls`` (``text_extra``: e.g. MoE sizes)."""
    from transformers import Qwen3VLProcessor

    tok = tokenizer(QWEN_SPECIALS)
    text = text_config(
        tok,
        rope_parameters=dict(QWEN3_ROPE),
        layer_types=["linear_attention", "full_attention"],
        linear_conv_kernel_dim=2,
        linear_key_head_dim=8,
        linear_num_key_heads=2,
        linear_num_value_heads=2,
        linear_value_head_dim=8,
        **text_extra,
    )
    config = config_cls(
        text_config=text,
        vision_config={
            **QWEN_VISION,
            "intermediate_size": 64,
            "out_hidden_size": 32,
            "num_position_embeddings": 16,
            "temporal_patch_size": 2,
        },
        **_qwen_ids(tok),
    )
    return save(folder, lambda: model_cls(config), _qwen_processor(Qwen3VLProcessor, tok))


def build_glm4v(folder: Path) -> Path:
    """GLM-4V: 3-D rotary positions over half the head, image between begin/end markers."""
    from transformers import Glm4vConfig, Glm4vForConditionalGeneration, Glm4vProcessor

    return glm4v_like(folder, Glm4vConfig, Glm4vForConditionalGeneration, Glm4vProcessor)


def glm4v_like(folder: Path, config_cls: Any, model_cls: Any, processor_cls: Any, **text_extra: Any) -> Path:
    """A GLM-4V-shaped model of the given classes (``text_extra``: e.g. MoE sizes)."""
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    specials = ["<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|video|>"]
    tok = tokenizer([*specials, "<|begin_of_video|>", "<|end_of_video|>"])
    images = Glm4vImageProcessorPil(
        size={"shortest_edge": 16 * 16, "longest_edge": 64 * 64},
        patch_size=8,
        merge_size=2,
        temporal_patch_size=2,
    )
    processor = without_video(processor_cls)(
        image_processor=images,
        tokenizer=tok,
        chat_template=chatml_template("<|begin_of_image|><|image|><|end_of_image|>"),
    )
    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": [2, 1, 1],
        "partial_rotary_factor": 0.5,
    }
    config = config_cls(
        text_config=text_config(tok, rope_parameters=rope, **text_extra),
        vision_config={
            **QWEN_VISION,
            "intermediate_size": 64,
            "out_hidden_size": 32,
            "image_size": 32,
            "temporal_patch_size": 2,
        },
        image_token_id=token_id(tok, "<|image|>"),
        video_token_id=token_id(tok, "<|video|>"),
        image_start_token_id=token_id(tok, "<|begin_of_image|>"),
        image_end_token_id=token_id(tok, "<|end_of_image|>"),
        video_start_token_id=token_id(tok, "<|begin_of_video|>"),
        video_end_token_id=token_id(tok, "<|end_of_video|>"),
    )
    return save(folder, lambda: model_cls(config), processor)


IDEFICS_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def build_idefics2(folder: Path) -> Path:
    """Idefics 2: SigLIP-like tower, perceiver resampler to 4 latents per image."""
    from transformers import Idefics2Config, Idefics2ForConditionalGeneration, Idefics2Processor
    from transformers.models.idefics2.image_processing_pil_idefics2 import Idefics2ImageProcessorPil

    tok = tokenizer(["<fake_token_around_image>", "<image>", "<end_of_utterance>"], add_bos=True)
    images = Idefics2ImageProcessorPil(
        size={"shortest_edge": 32, "longest_edge": 32}, do_image_splitting=False
    )
    processor = Idefics2Processor(
        image_processor=images, tokenizer=tok, image_seq_len=4, chat_template=IDEFICS_TEMPLATE
    )
    vision = siglip_vision()
    vision.pop("model_type")
    config = Idefics2Config(
        vision_config=vision,
        perceiver_config={
            "resampler_n_latents": 4,
            "resampler_depth": 1,
            "resampler_n_heads": 2,
            "resampler_head_dim": 8,
            "num_key_value_heads": 1,
        },
        text_config=text_config(tok, "<end_of_utterance>", model_type="mistral", sliding_window=None),
        image_token_id=token_id(tok, "<image>"),
    )
    return save(folder, lambda: Idefics2ForConditionalGeneration(config), processor)


def build_smolvlm(folder: Path) -> Path:
    """SmolVLM: Idefics3's architecture under its own model type; processor needs num2words."""
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMProcessor
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

    row_col = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    tok = tokenizer(
        ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>", *row_col], add_bos=True
    )
    images = SmolVLMImageProcessorPil(
        size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, do_image_splitting=True
    )
    processor = without_video(SmolVLMProcessor)(
        image_processor=images,
        tokenizer=tok,
        video_processor=None,
        image_seq_len=4,
        chat_template=IDEFICS_TEMPLATE,
    )
    config = SmolVLMConfig(
        vision_config=siglip_vision(),
        text_config=text_config(tok, "<end_of_utterance>", model_type="llama"),
        image_token_id=token_id(tok, "<image>"),
        scale_factor=2,
    )
    return save(folder, lambda: SmolVLMForConditionalGeneration(config), processor)


def build_internvl(folder: Path) -> Path:
    """InternVL: GOT-OCR2 crops, pixel shuffle, Qwen2 decoder; processor built without the video part."""
    from transformers import InternVLConfig, InternVLForConditionalGeneration, InternVLProcessor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    named = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    tok = tokenizer(named=named)
    images = GotOcr2ImageProcessorPil(
        size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1, max_patches=3
    )
    processor = without_video(InternVLProcessor)(
        image_processor=images,
        tokenizer=tok,
        image_seq_length=4,
        chat_template=chatml_template("<IMG_CONTEXT>\n"),
    )
    config = InternVLConfig(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": [32, 32],
            "patch_size": [8, 8],
        },
        text_config=text_config(tok, model_type="qwen2"),
        image_token_id=token_id(tok, "<IMG_CONTEXT>"),
        image_seq_length=4,
        downsample_ratio=0.5,
    )
    return save(folder, lambda: InternVLForConditionalGeneration(config), processor)


def build_got_ocr2(folder: Path) -> Path:
    """GOT-OCR2: SAM-like vision encoder; its processor takes a flat list of images."""
    from transformers import GotOcr2Config, GotOcr2ForConditionalGeneration, GotOcr2Processor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    tok = tokenizer(["<img>", "</img>", "<imgpad>"])
    # 128 px in 2 px patches: the encoder's 64 x 64 grid is reduced 4 x 4 to the 256 image tokens the
    # processor always writes (its default ``num_image_tokens``); windowed attention keeps it cheap.
    images = GotOcr2ImageProcessorPil(size={"height": 128, "width": 128})
    processor = GotOcr2Processor(
        image_processor=images, tokenizer=tok, chat_template=chatml_template("<img><imgpad></img>\n")
    )
    config = GotOcr2Config(
        vision_config={
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "mlp_dim": 64,
            "image_size": 128,
            "patch_size": 2,
            "window_size": 8,
            "global_attn_indexes": [],
            "output_channels": 32,
        },
        text_config=text_config(tok, model_type="qwen2"),
        image_token_index=token_id(tok, "<imgpad>"),
        image_seq_length=256,
    )
    return save(folder, lambda: GotOcr2ForConditionalGeneration(config), processor)
