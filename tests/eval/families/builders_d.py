"""Tiny builders: mixture-of-experts and successor variants, and families whose images need torchvision."""

from __future__ import annotations

import json
from pathlib import Path

from tests.eval.families.builders_b import glm4v_like, qwen3_5_like, qwen3_vl_like
from tests.eval.families.common import SEED, chatml_template, siglip_vision, text_config, tokenizer

MOE = {"moe_intermediate_size": 32, "num_experts_per_tok": 2}


def build_qwen3_vl_moe(folder: Path) -> Path:
    """Qwen3-VL-MoE: Qwen3-VL with mixture-of-experts decoder layers."""
    from transformers import Qwen3VLMoeConfig, Qwen3VLMoeForConditionalGeneration

    return qwen3_vl_like(
        folder,
        Qwen3VLMoeConfig,
        Qwen3VLMoeForConditionalGeneration,
        num_experts=4,
        decoder_sparse_step=1,
        **MOE,
    )


def build_qwen3_5_moe(folder: Path) -> Path:
    """Qwen3.5-MoE: Qwen3.5 with mixture-of-experts layers (recurrent layers: plain scorer)."""
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration

    return qwen3_5_like(
        folder,
        Qwen3_5MoeConfig,
        Qwen3_5MoeForConditionalGeneration,
        num_experts=4,
        shared_expert_intermediate_size=32,
        **MOE,
    )


def build_glm46v(folder: Path) -> Path:
    """GLM-4.6V: GLM-4V's architecture under its own processor."""
    from transformers import Glm46VConfig, Glm46VForConditionalGeneration, Glm46VProcessor

    return glm4v_like(folder, Glm46VConfig, Glm46VForConditionalGeneration, Glm46VProcessor)


def build_glm4v_moe(folder: Path) -> Path:
    """GLM-4.5V (glm4v_moe): GLM-4V with routed and shared experts after a first dense layer."""
    from transformers import Glm4vMoeConfig, Glm4vMoeForConditionalGeneration, Glm4vProcessor

    return glm4v_like(
        folder,
        Glm4vMoeConfig,
        Glm4vMoeForConditionalGeneration,
        Glm4vProcessor,
        n_routed_experts=4,
        n_shared_experts=1,
        first_k_dense_replace=1,
        **MOE,
    )


def _hub_folder_without_processor(
    folder: Path, model: object, tok: object, processor: dict[str, str]
) -> Path:
    """Model and tokenizer saved, the processor and image-processor configs written as the Hub has them."""
    model.save_pretrained(folder)  # type: ignore[attr-defined]
    tok.save_pretrained(folder)  # type: ignore[attr-defined]
    (folder / "processor_config.json").write_text(
        json.dumps({"processor_class": processor["processor"]}), encoding="utf-8"
    )
    preprocessor = {"image_processor_type": processor["image"], "processor_class": processor["processor"]}
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor), encoding="utf-8")
    (folder / "chat_template.jinja").write_text(chatml_template("<image>"), encoding="utf-8")
    return folder


def build_cohere2_vision(folder: Path) -> Path:
    """Command A Vision (cohere2_vision): its image processor exists only as a torchvision one."""
    import torch
    from transformers import Cohere2VisionConfig, Cohere2VisionForConditionalGeneration

    tok = tokenizer(["<image>"], add_bos=True)
    config = Cohere2VisionConfig(
        vision_config=siglip_vision(),
        text_config=text_config(tok, model_type="cohere2", sliding_window=512),
        image_token_id=int(tok.convert_tokens_to_ids("<image>")),  # type: ignore[arg-type]
        downsample_factor=2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = Cohere2VisionForConditionalGeneration(config)
    return _hub_folder_without_processor(
        folder, model, tok, {"processor": "Cohere2VisionProcessor", "image": "Cohere2VisionImageProcessor"}
    )


def build_lfm2_vl(folder: Path) -> Path:
    """LFM2-VL: its image processor exists only as a torchvision one."""
    import torch
    from transformers import Lfm2VlConfig, Lfm2VlForConditionalGeneration

    tok = tokenizer(["<image>"], add_bos=True)
    text = text_config(tok, model_type="lfm2", layer_types=["full_attention", "conv"], conv_L_cache=3)
    config = Lfm2VlConfig(
        vision_config={**siglip_vision(), "model_type": "siglip2_vision_model", "num_patches": 16},
        text_config=text,
        image_token_id=int(tok.convert_tokens_to_ids("<image>")),  # type: ignore[arg-type]
        downsample_factor=2,
        projector_hidden_size=32,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = Lfm2VlForConditionalGeneration(config)
    return _hub_folder_without_processor(
        folder, model, tok, {"processor": "Lfm2VlProcessor", "image": "Lfm2VlImageProcessor"}
    )


def build_fast_vlm(folder: Path) -> Path:
    """FastVLM: a LLaVA with a FastViT tower that only timm provides; written as config and processor.

    Without timm the model class cannot be built, so the folder holds the config, the tokenizer, a
    LLaVA processor and a placeholder weights file: loading must stop with one line naming timm
    when the model class is built, before any weight is read.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import CLIPImageProcessorPil, FastVlmConfig, LlavaProcessor

    tok = tokenizer(["<image>"], add_bos=True)
    side = {"height": 32, "width": 32}
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(size=side, crop_size=side, do_center_crop=False),
        tokenizer=tok,
        patch_size=8,
        vision_feature_select_strategy="full",
        chat_template=chatml_template("<image>\n"),
    )
    config = FastVlmConfig(
        text_config=text_config(tok, model_type="qwen2"),
        image_token_index=int(tok.convert_tokens_to_ids("<image>")),  # type: ignore[arg-type]
        image_seq_length=16,
    )
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    processor.save_pretrained(folder)
    save_file({"placeholder": torch.zeros(1)}, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder
