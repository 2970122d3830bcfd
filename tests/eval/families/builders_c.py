"""Tiny builders: PaliGemma, Mllama, DeepSeek-VL, Ovis2, LLaVA-NeXT-Video and Mistral 3 (no torchvision)."""

from __future__ import annotations

import json
from pathlib import Path

from mmspubench.eval.checkpoint.families import without_video

from tests.eval.families.common import (
    SEED,
    chatml_template,
    llava_next_config_kwargs,
    llava_next_images,
    llava_processor_kwargs,
    save,
    siglip_vision,
    text_config,
    token_id,
    tokenizer,
)


def build_paligemma(folder: Path) -> Path:
    """PaliGemma: prefix-LM (image + prompt attend bidirectionally), the answer is the suffix.

    No chat template, as on the Hub: the harness prompts it in its own format.
    """
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tok = tokenizer(named={"image_token": "<image>"}, bos="<bos>", eos="<eos>")
    images = SiglipImageProcessorPil(size={"height": 32, "width": 32})
    setattr(images, "image_seq_length", 16)  # noqa: B010 (PaliGemma reads it; no typed field)
    processor = PaliGemmaProcessor(image_processor=images, tokenizer=tok)
    config = PaliGemmaConfig(
        vision_config=siglip_vision(projection_dim=32),
        text_config=text_config(
            processor.tokenizer, "<eos>", model_type="gemma", vocab_size=len(processor.tokenizer)
        ),
        image_token_index=processor.image_token_id,
        projection_dim=32,
        hidden_size=32,
        vocab_size=len(processor.tokenizer),
    )
    return save(folder, lambda: PaliGemmaForConditionalGeneration(config), processor)


MLLAMA_TEMPLATE = chatml_template("<|image|>", bos="{{ bos_token }}")


def build_mllama(folder: Path) -> Path:
    """Mllama (Llama 3.2 Vision): image tiles enter through cross-attention layers."""
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaProcessor
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil

    tok = tokenizer(["<|image|>", "<|python_tag|>"], bos="<|begin_of_text|>", eos="<|eot_id|>")
    images = MllamaImageProcessorPil(size={"height": 32, "width": 32}, max_image_tiles=2)
    processor = MllamaProcessor(image_processor=images, tokenizer=tok, chat_template=MLLAMA_TEMPLATE)
    text = text_config(
        tok,
        "<|eot_id|>",
        cross_attention_layers=[1],
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    text.pop("head_dim")
    config = MllamaConfig(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_global_layers": 1,
            "attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
            "max_num_tiles": 2,
            "vision_output_dim": 64,
            "intermediate_layers_indices": [0],
            "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]],
        },
        text_config=text,
        image_token_index=token_id(tok, "<|image|>"),
    )
    return save(folder, lambda: MllamaForConditionalGeneration(config), processor)


def build_deepseek_vl(folder: Path) -> Path:
    """DeepSeek-VL: SigLIP tower, a fixed number of image tokens, Llama decoder."""
    from transformers import DeepseekVLConfig, DeepseekVLForConditionalGeneration, DeepseekVLProcessor
    from transformers.models.deepseek_vl.image_processing_pil_deepseek_vl import DeepseekVLImageProcessorPil

    tok = tokenizer(named={"image_token": "<image_placeholder>"}, add_bos=True)
    images = DeepseekVLImageProcessorPil(size={"height": 32, "width": 32})
    processor = DeepseekVLProcessor(
        image_processor=images,
        tokenizer=tok,
        num_image_tokens=16,
        chat_template=chatml_template("<image_placeholder>\n"),
    )
    config = DeepseekVLConfig(
        vision_config=siglip_vision(vision_use_head=False),
        text_config=text_config(tok, model_type="llama"),
        image_token_id=token_id(tok, "<image_placeholder>"),
    )
    return save(folder, lambda: DeepseekVLForConditionalGeneration(config), processor)


def build_ovis2(folder: Path) -> Path:
    """Ovis2: visual tokens as probabilities over a visual vocabulary, Qwen2 decoder."""
    from transformers import Ovis2Config, Ovis2ForConditionalGeneration, Ovis2Processor
    from transformers.models.ovis2.image_processing_pil_ovis2 import Ovis2ImageProcessorPil

    indicators = ["<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>"]
    tok = tokenizer(["<image>", "<IMG_ATOM>", *indicators])
    images = Ovis2ImageProcessorPil(size={"height": 32, "width": 32}, crop_to_patches=False)
    processor = Ovis2Processor(
        image_processor=images, tokenizer=tok, image_seq_length=16, chat_template=chatml_template("<image>\n")
    )
    text = text_config(tok, model_type="qwen2")
    config = Ovis2Config(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
            "vocab_size": 64,
            "hidden_stride": 1,
        },
        text_config=text,
        image_token_id=token_id(tok, "<IMG_ATOM>"),
        visual_indicator_token_ids=[token_id(tok, t) for t in indicators],
        vocab_size=len(tok),
        hidden_size=32,
    )
    return save(folder, lambda: Ovis2ForConditionalGeneration(config), processor)


def build_llava_next_video(folder: Path) -> Path:
    """LLaVA-NeXT-Video: LLaVA-NeXT with a video part (its video processor comes first in ``__init__``)."""
    from transformers import (
        LlavaNextVideoConfig,
        LlavaNextVideoForConditionalGeneration,
        LlavaNextVideoProcessor,
    )

    tok = tokenizer(["<image>", "<video>"], add_bos=True)
    processor = without_video(LlavaNextVideoProcessor)(
        video_processor=None, image_processor=llava_next_images(), **llava_processor_kwargs(tok)
    )
    config = LlavaNextVideoConfig(
        **llava_next_config_kwargs(tok), video_token_index=token_id(tok, "<video>"), spatial_pool_stride=2
    )
    return save(folder, lambda: LlavaNextVideoForConditionalGeneration(config), processor)


def build_mistral3(folder: Path) -> Path:
    """Mistral 3 (Pixtral tower): the Hub folder layout, written without its processor class.

    PixtralProcessor imports torchvision, so the processor object cannot be built here; the folder
    holds the model, the tokenizer and the processor config naming PixtralProcessor, as on the Hub.
    """
    import torch
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration

    tok = tokenizer(["[IMG]", "[IMG_BREAK]", "[IMG_END]"], add_bos=True)
    config = Mistral3Config(
        vision_config={
            "model_type": "pixtral",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "head_dim": 16,
            "image_size": 32,
            "patch_size": 8,
        },
        text_config=text_config(tok, model_type="mistral", sliding_window=None),
        image_token_index=token_id(tok, "[IMG]"),
        spatial_merge_size=2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        Mistral3ForConditionalGeneration(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    processor_config = {"processor_class": "PixtralProcessor", "patch_size": 8, "spatial_merge_size": 2}
    (folder / "processor_config.json").write_text(json.dumps(processor_config), encoding="utf-8")
    preprocessor = {"image_processor_type": "PixtralImageProcessor", "processor_class": "PixtralProcessor"}
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor), encoding="utf-8")
    (folder / "chat_template.jinja").write_text(chatml_template("[IMG]"), encoding="utf-8")
    return folder
