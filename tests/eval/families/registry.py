"""Every family of the matrix: its tiny builder, the error expected where it cannot run, its notes."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tests.eval import tiny_models
from tests.eval.families import builders_a, builders_b, builders_c, builders_d

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "aya_vision": builders_a.build_aya_vision,
    "cohere2_vision": builders_d.build_cohere2_vision,
    "deepseek_vl": builders_c.build_deepseek_vl,
    "fast_vlm": builders_d.build_fast_vlm,
    "gemma3": tiny_models.build_gemma3,
    "glm46v": builders_d.build_glm46v,
    "glm4v": builders_b.build_glm4v,
    "glm4v_moe": builders_d.build_glm4v_moe,
    "got_ocr2": builders_b.build_got_ocr2,
    "idefics2": builders_b.build_idefics2,
    "idefics3": tiny_models.build_idefics3,
    "internvl": builders_b.build_internvl,
    "lfm2_vl": builders_d.build_lfm2_vl,
    "llava": tiny_models.build_llava,
    "llava_next": builders_a.build_llava_next,
    "llava_next_video": builders_c.build_llava_next_video,
    "llava_onevision": builders_a.build_llava_onevision,
    "mistral3": builders_c.build_mistral3,
    "mllama": builders_c.build_mllama,
    "ovis2": builders_c.build_ovis2,
    "paligemma": builders_c.build_paligemma,
    "qwen2_5_vl": builders_b.build_qwen2_5_vl,
    "qwen2_vl": tiny_models.build_qwen2_vl,
    "qwen3_5": builders_b.build_qwen3_5,
    "qwen3_5_moe": builders_d.build_qwen3_5_moe,
    "qwen3_vl": builders_b.build_qwen3_vl,
    "qwen3_vl_moe": builders_d.build_qwen3_vl_moe,
    "smolvlm": builders_b.build_smolvlm,
    "vipllava": builders_a.build_vipllava,
}
"""``model_type`` -> builder of a tiny random model folder (saved with ``save_pretrained``)."""

EXPECTED_ERRORS: dict[str, str] = {
    "cohere2_vision": "needs the Python package 'torchvision'",
    "fast_vlm": "needs the Python package 'timm'",
    "lfm2_vl": "needs the Python package 'torchvision'",
    "mistral3": "needs the Python package 'torchvision'",
}
"""Families that cannot run without torchvision: the one-line error each must give instead."""

OPTIONAL_PACKAGES: dict[str, str] = {"smolvlm": "num2words"}
"""Families whose processor needs a package of the ``models`` extra; without it, the named error."""


def expected_error(family: str) -> str | None:
    """The error ``family`` must give here: torchvision's, or the ``models`` extra's when it is missing."""
    import importlib.util

    package = OPTIONAL_PACKAGES.get(family)
    if package is not None and importlib.util.find_spec(package) is None:
        return f"pip install {package}"
    return EXPECTED_ERRORS.get(family)


NOTES: dict[str, str] = {
    "gemma3": "fast while a request fits in the sliding window",
    "aya_vision": "fast while a request fits in the sliding window",
    "got_ocr2": "images passed as a flat list",
    "llava_next_video": "processor built without its video part",
    "llava_onevision": "processor built without its video part",
    "glm4v": "processor built without its video part; 3-D rotary positions",
    "internvl": "processor built without its video part",
    "mllama": "cross-attention keys/values cached with the prefix",
    "mistral3": "Pixtral processor needs torchvision: `pip install torchvision`",
    "cohere2_vision": "image processor needs torchvision: `pip install torchvision`",
    "lfm2_vl": "image processor needs torchvision: `pip install torchvision`",
    "fast_vlm": "FastViT vision tower needs timm: `pip install timm`",
    "glm46v": "processor built without its video part; 3-D rotary positions",
    "glm4v_moe": "processor built without its video part; 3-D rotary positions; mixture of experts",
    "qwen3_vl_moe": "processor built without its video part; 3-D rotary positions; mixture of experts",
    "paligemma": "prefix LM: the continuation is scored as the processor's answer suffix; no chat template: image, then the texts",
    "qwen2_vl": "processor built without its video part; 3-D rotary positions",
    "qwen2_5_vl": "processor built without its video part; 3-D rotary positions",
    "qwen3_vl": "processor built without its video part; 3-D rotary positions",
    "qwen3_5": "processor built without its video part; 3-D rotary positions",
    "qwen3_5_moe": "processor built without its video part; 3-D rotary positions; mixture of experts",
    "smolvlm": "processor built without its video part; needs `num2words` (`models` extra)",
}
"""Short notes per family for the models page's table (what the harness does differently for it)."""

FAST_SUITE = ("qwen3_vl", "paligemma", "mistral3")
"""Families the default (fast) test run covers end to end; the slow run covers every family."""


SHARPEN = 10.0
"""Factor on the language model's weights (initialiser range 0.02 -> 0.2), see :func:`sharpen`."""


def sharpen(folder: Path) -> None:
    """Scale the saved language model's linear and embedding weights by :data:`SHARPEN`.

    A tiny decoder at the usual initialiser range barely depends on its context (CGLs of different
    conditions differ by ~1e-2, a wrong position by ~1e-4, the tolerance). Scaled, context matters
    (conditions differ by ~1, a one-position error moves scores by ~0.4), so plain = fast within
    1e-4 is a real check. Loaded and saved with the model's own class, like any checkpoint.
    """
    import torch
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(folder)
    with torch.no_grad():
        for module in model.get_decoder().modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
                module.weight.mul_(SHARPEN)
        for name, parameter in model.get_decoder().named_parameters():
            if "gate" in name and parameter.dim() <= 1 and not parameter.any():
                parameter.fill_(1.0)  # zero-initialised gates (Mllama's cross-attention) opened
    model.save_pretrained(folder)


def family_dir(family: str, root: Path) -> Path:
    """Folder of the tiny ``family`` model under ``root``, built (and sharpened) on first request."""
    folder = root / f"family-{family}"
    if not folder.is_dir():
        staging = root / f".family-{family}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        BUILDERS[family](staging)
        if family not in EXPECTED_ERRORS:
            sharpen(staging)
        staging.rename(folder)
    return folder
