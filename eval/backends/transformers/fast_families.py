"""Which families the fast scorer serves, and the named reason wherever it falls back to plain.

Prefix-cache reuse (``mmspubench.eval.backends.transformers.fast_scoring``) is exact when a token's states depend on
earlier tokens only, the cache is a per-layer key/value store and the attention takes a custom
4-D mask. :data:`EXACT_FAMILIES` lists the ``model_type`` values proven equal to the plain scorer
(within 1e-4 in float32) by the family matrix test (``tests/eval/families``); every other model is
scored with the plain scorer and :func:`fallback_reason` says why:

- a family known not to fit (:data:`FALLBACKS`): PaliGemma's prefix-LM prompt attends
  bidirectionally, so the shared prefix's states depend on each condition's text;
- a language model with recurrent (linear-attention) layers (Qwen3.5): their state is not a
  key/value list a mask can select from;
- an attention implementation without a custom mask (``flash_attention_2``);
- any family not in the table ("not verified").

Sliding-window layers (Gemma 3, Aya Vision's Cohere 2, Mistral) are exact while every request
fits in the window: inside it a sliding layer attends exactly as a full one, and the prefix cache
keeps every key (it is not cropped). :func:`call_fallback_reason` checks this per call; a call
with a longer request is scored plain, with the reason. Mllama's image enters through
cross-attention layers: their keys/values are computed once in the prefix pass and kept in the
cache, and the packed suffix pass carries each token's cross-attention mask.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

EXACT_FAMILIES: frozenset[str] = frozenset(
    {
        "aya_vision",
        "deepseek_vl",
        "gemma3",
        "glm46v",
        "glm4v",
        "glm4v_moe",
        "got_ocr2",
        "idefics2",
        "idefics3",
        "internvl",
        "llava",
        "llava_next",
        "llava_next_video",
        "llava_onevision",
        "mllama",
        "ovis2",
        "qwen2_5_vl",
        "qwen2_vl",
        "qwen3_vl",
        "qwen3_vl_moe",
        "smolvlm",
        "vipllava",
    }
)
"""``config.model_type`` values whose reuse is tested equal to plain scoring (a tiny model of each)."""

FALLBACKS: dict[str, str] = {
    "paligemma": "prefix-LM mask: the prompt attends bidirectionally, so its states depend on later prompt tokens",
}
"""Known families scored by the plain scorer, with the reason."""

NOT_VERIFIED = "family not verified exact for prefix-cache reuse"
"""Reason given for a family in neither table."""

RECURRENT_LAYERS = "language model has recurrent (linear-attention) layers, whose state a mask cannot split"
"""Reason given when the cache has layers that are not plain or sliding key/value stores."""

SLIDING_WINDOW = "a request is longer than the language model's sliding window"
"""Reason given for a call whose longest request does not fit in the sliding window."""

MASKABLE = ("sdpa", "eager")
"""Attention implementations that take the packed suffix pass's custom 4-D mask."""

NO_CUSTOM_MASK = "attention implementation takes no custom 4-D mask"
"""Reason given for e.g. ``flash_attention_2``: the packed suffix pass needs its own mask."""


def fallback_reason(model: Any) -> str | None:
    """Why ``model`` must use the plain scorer, or None when the fast path is exact for it."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    family = str(getattr(model.config, "model_type", ""))
    if family in FALLBACKS:
        return FALLBACKS[family]
    if hasattr(model.config, "get_text_config"):
        layers = DynamicCache(config=model.config).layers
        if any(type(layer) not in (DynamicLayer, DynamicSlidingWindowLayer) for layer in layers):
            return RECURRENT_LAYERS
    if family not in EXACT_FAMILIES:
        return NOT_VERIFIED
    implementation = getattr(model.config.get_text_config(), "_attn_implementation", None) or "eager"
    if implementation not in MASKABLE:
        return f"{NO_CUSTOM_MASK} ({implementation})"
    return None


def sliding_window(model: Any) -> int | None:
    """The language model's sliding window when any layer uses one, else ``None``."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicSlidingWindowLayer

    if not any(
        isinstance(layer, DynamicSlidingWindowLayer) for layer in DynamicCache(config=model.config).layers
    ):
        return None
    window = getattr(model.config.get_text_config(), "sliding_window", None)
    return int(window) if window else None


def call_fallback_reason(model: Any, lengths: Iterable[int]) -> str | None:
    """Why one call (requests of ``lengths`` tokens) must be scored plain, or None (see module doc)."""
    window = sliding_window(model)
    if window is None:
        return None
    longest = max(lengths, default=0)
    if longest >= window:
        return f"{SLIDING_WINDOW} ({longest} tokens, window {window})"
    return None
