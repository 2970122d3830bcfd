"""Tiny builders: LLaVA-style families (LLaVA-NeXT, LLaVA-OneVision, VipLLaVA, Aya Vision, Mistral 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmspubench.eval.checkpoint.families import without_video

from tests.eval.families.common import (
    PINPOINTS,
    chatml_template,
    clip_vision,
    llava_next_config_kwargs,
    llava_next_images,
    llava_processor_kwargs,
    save,
    siglip_vision,
    text_config,
    token_id,
    tokenizer,
)


def build_llava_next(folder: Path) -> Path:
    """LLaVA-NeXT: any-resolution tiles (base view + up to 2 tiles), unpadded features with row ends."""
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextProcessor

    tok = tokenizer(["<image>"], add_bos=True)
    processor = LlavaNextProcessor(image_processor=llava_next_images(), **llava_processor_kwargs(tok))
    config = LlavaNextConfig(**llava_next_config_kwargs(tok))
    return save(folder, lambda: LlavaNextForConditionalGeneration(config), processor)


def build_llava_onevision(folder: Path) -> Path:
    """LLaVA-OneVision: SigLIP tower, any-resolution tiles; its processor is built without the video part."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionProcessor,
    )
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )

    tok = tokenizer(["<image>", "<video>"])
    images = LlavaOnevisionImageProcessorPil(
        size={"height": 32, "width": 32}, image_grid_pinpoints=PINPOINTS, do_pad=True
    )
    processor = without_video(LlavaOnevisionProcessor)(
        image_processor=images,
        tokenizer=tok,
        num_image_tokens=16,
        vision_feature_select_strategy="full",
        chat_template=chatml_template("<image>\n"),
        vision_aspect_ratio="anyres_max_9",
    )
    config = LlavaOnevisionConfig(
        vision_config=siglip_vision(),
        text_config=text_config(tok, model_type="qwen2"),
        image_token_index=token_id(tok, "<image>"),
        video_token_index=token_id(tok, "<video>"),
        image_grid_pinpoints=PINPOINTS,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        vision_aspect_ratio="anyres_max_9",
    )
    return save(folder, lambda: LlavaOnevisionForConditionalGeneration(config), processor)


def build_vipllava(folder: Path) -> Path:
    """VipLLaVA: LLaVA with features from several vision layers."""
    from transformers import (
        CLIPImageProcessorPil,
        LlavaProcessor,
        VipLlavaConfig,
        VipLlavaForConditionalGeneration,
    )

    tok = tokenizer(["<image>"], add_bos=True)
    images = CLIPImageProcessorPil(
        size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32}, do_center_crop=False
    )
    processor = LlavaProcessor(image_processor=images, **llava_processor_kwargs(tok))
    # the name every transformers reads (5.23 renamed it vision_feature_layer, keeping this one)
    layers: dict[str, Any] = {"vision_feature_layers": [-2, -1]}
    config = VipLlavaConfig(
        vision_config=clip_vision(),
        text_config=text_config(tok, model_type="llama"),
        image_token_index=token_id(tok, "<image>"),
        **layers,
    )
    return save(folder, lambda: VipLlavaForConditionalGeneration(config), processor)


def build_aya_vision(folder: Path) -> Path:
    """Aya Vision: GOT-OCR2 crops + global view, pixel shuffle, Cohere 2 decoder (sliding layers)."""
    from transformers import AyaVisionConfig, AyaVisionForConditionalGeneration, AyaVisionProcessor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    specials = ["<image>", "<|START_OF_IMG|>", "<|END_OF_IMG|>", "<|IMG_PATCH|>", "<|IMG_LINE_BREAK|>"]
    tok = tokenizer(specials, add_bos=True)
    images = GotOcr2ImageProcessorPil(
        size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1, max_patches=3
    )
    processor = AyaVisionProcessor(
        image_processor=images,
        tokenizer=tok,
        patch_size=16,
        img_size=32,
        downsample_factor=2,
        chat_template=chatml_template("<image>"),
    )
    config = AyaVisionConfig(
        vision_config=siglip_vision(patch_size=16),
        text_config=text_config(
            tok, model_type="cohere2", sliding_window=512, layer_types=["sliding_attention", "full_attention"]
        ),
        image_token_index=token_id(tok, "<|IMG_PATCH|>"),
        downsample_factor=2,
        adapter_layer_norm_eps=1e-6,
    )
    return save(folder, lambda: AyaVisionForConditionalGeneration(config), processor)


def build_mistral3(folder: Path) -> Path:
    """Mistral 3 (Pixtral tower): its processor needs torchvision, so it cannot be built here."""
    from transformers.models.pixtral.processing_pixtral import PixtralProcessor  # needs torchvision

    raise AssertionError(f"unreachable without torchvision: {PixtralProcessor}")
