"""Zero-shot CLIP: class-name text embeddings once, image embeddings per batch, ranks of the truth.

The model is found like eval's models (a local folder or a Hub id through
:func:`mmspubench.eval.checkpoint.hub.resolve_model`) and loaded with ``from_pretrained``. Ranking is
plain numpy on the float32 logits: classes are ordered by logit, best first, ties broken by the
class order; the 1-based rank of the true class is its place in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from mmspubench.errors import MMSpuBenchError

if TYPE_CHECKING:
    from PIL.Image import Image

DEFAULT_CLIP = "openai/clip-vit-large-patch14-336"
"""The paper's selector, CLIP-ViT-L/14 at 336 pixels."""


@dataclass(frozen=True, slots=True)
class Ranked:
    """The zero-shot outcome for one image."""

    true_rank: int
    """1-based rank of the true class (1 = CLIP's top choice)."""
    above: tuple[tuple[str, float], ...]
    """Classes ranked above the truth, best first, with their softmax probabilities."""


class ZeroShotClip:
    """A CLIP model with the text embeddings of every class prompt computed once."""

    def __init__(self, model: Any, processor: Any, class_names: Sequence[str], template: str) -> None:
        import torch

        self.model, self.processor = model, processor
        self.class_names = tuple(class_names)
        prompts = [template.format(name) for name in self.class_names]
        tokens = processor.tokenizer(prompts, padding=True, truncation=True, return_tensors="pt").to(
            model.device
        )
        with torch.inference_mode():
            text = _pooled(model.get_text_features(**tokens)).float()
            self.text = torch.nn.functional.normalize(text, dim=-1)
            self.scale = float(model.logit_scale.exp())

    def logits(self, images: Sequence[Image]) -> np.ndarray:
        """``(len(images), n_classes)`` float32 logits: scale x cosine similarity."""
        import torch

        pixels = self.processor.image_processor(images=list(images), return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            feats = _pooled(self.model.get_image_features(pixel_values=pixels.to(self.model.device))).float()
            feats = torch.nn.functional.normalize(feats, dim=-1)
            return (self.scale * feats @ self.text.T).cpu().numpy().astype(np.float32)


def _pooled(out: Any) -> Any:
    """Projected features from ``get_*_features`` (a tensor, or an output with ``pooler_output``)."""
    return getattr(out, "pooler_output", out)


def rank_rows(logits: np.ndarray, truth: Sequence[int], names: Sequence[str]) -> list[Ranked]:
    """Rank of each row's true class and the classes above it, from logits (numpy only)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=1, keepdims=True)
    order = np.argsort(-logits, axis=1, kind="stable")
    out = []
    for row, true in enumerate(truth):
        place = int(np.nonzero(order[row] == true)[0][0])
        above = tuple((names[int(c)], float(probs[row, c])) for c in order[row, :place])
        out.append(Ranked(true_rank=place + 1, above=above))
    return out


def load_clip(name: str, device: str = "cpu") -> tuple[Any, Any, str | None]:
    """``(model, processor, revision)`` of a CLIP-style dual encoder, in eval mode."""
    from mmspubench.eval.checkpoint.hub import resolve_model
    from transformers import AutoModel, AutoProcessor

    folder, revision = resolve_model(name)
    try:
        model = AutoModel.from_pretrained(folder).to(device).eval()
        processor = AutoProcessor.from_pretrained(folder)
    except (OSError, ValueError, KeyError) as err:
        raise MMSpuBenchError(f"--clip {name!r}: could not be loaded ({str(err).splitlines()[0]})") from None
    needed = ("get_text_features", "get_image_features", "logit_scale")
    if not all(hasattr(model, attr) for attr in needed) or not hasattr(processor, "image_processor"):
        raise MMSpuBenchError(
            f"--clip {name!r}: {type(model).__name__} is not a CLIP-style image-text dual encoder"
        )
    return model, processor, revision
