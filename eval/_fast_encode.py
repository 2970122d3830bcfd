"""The fast scorer's encode step: the adapter's tokenization, each image processed once per call."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from mmspubench.eval.protocol import ScoreRequest


@dataclass(frozen=True, slots=True)
class Encoded:
    """One request as the model sees it."""

    ids: torch.Tensor
    """1-D token ids of context + continuation."""
    n_context: int
    """Number of leading ids from the context."""
    token_inputs: dict[str, torch.Tensor]
    """Other per-token model inputs, shape ``(1, len(ids))`` (e.g. ``mm_token_type_ids``)."""
    image_inputs: dict[str, torch.Tensor]
    """Per-image model inputs (``pixel_values``, ``image_grid_thw``...), batch dimension first."""
    positions: torch.Tensor | None
    """Position ids of the full sequence when the family needs its own (``(3, 1, L)`` M-RoPE), else None."""


def encode_all(adapter: Any, requests: Sequence[ScoreRequest]) -> list[Encoded]:
    """Encode a call's requests as the adapter's encode step does, processing each image once.

    ``adapter.encode`` is ``encode_request(adapter.processor, ...)``; here the processor's image
    processor is wrapped so that the same image object with the same options is processed once
    per call (every condition of an item carries the same image; the output depends on nothing
    else), so tokens and pixels are exactly the adapter's.
    """
    processor = copy.copy(adapter.processor)
    processor.image_processor = _OnceImageProcessor(adapter.processor.image_processor)
    return [encode(adapter, request, processor) for request in requests]


def encode(adapter: Any, request: ScoreRequest, processor: Any = None) -> Encoded:
    """Encode one request like the adapter's encode step (the plain scorer's), split for reuse."""
    from mmspubench.eval.hooks import SEQUENCE_KEYS
    from mmspubench.eval.scoring import encode_request

    enc = encode_request(
        processor if processor is not None else adapter.processor,
        request,
        add_special_tokens=adapter.add_special_tokens_for(request.context),
    )
    token_inputs = {
        k: v for k, v in enc.inputs.items() if k in SEQUENCE_KEYS and k not in ("input_ids", "attention_mask")
    }
    image_inputs = {k: v for k, v in enc.inputs.items() if k not in SEQUENCE_KEYS}
    # The position hook reads ids and grid sizes only: it runs on the CPU copies.
    positions = adapter.hooks.position_ids(adapter.model, enc.inputs)
    return Encoded(
        ids=enc.inputs["input_ids"][0],
        n_context=enc.n_context,
        token_inputs=token_inputs,
        image_inputs=image_inputs,
        positions=None if positions is None else positions.cpu(),
    )


class _OnceImageProcessor:
    """An image processor that returns its earlier output for the same image objects and options."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._done: dict[tuple[tuple[int, ...], str], Any] = {}
        self._alive: list[Any] = []  # the keyed images stay alive, so their ids stay theirs

    def __call__(self, images: Any, **kwargs: Any) -> Any:
        key = (tuple(id(image) for image in _flat(images)), repr(sorted(kwargs.items())))
        if key not in self._done:
            self._done[key] = self._inner(images, **kwargs)
            self._alive.append(images)
        # Processors may pop entries from the output (Idefics3 pops rows/cols): hand out a copy.
        return copy.copy(self._done[key])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _flat(images: Any) -> list[Any]:
    if isinstance(images, (list, tuple)):
        return [leaf for item in images for leaf in _flat(item)]
    return [images]


class ImageKeys:
    """Equal keys for the same PIL object or identical pixels; each image hashed once per call."""

    def __init__(self) -> None:
        self._by_object: dict[int, str] = {}
        self._alive: list[object] = []  # keeps ids stable during the call

    def key(self, image: Any) -> str:
        import hashlib

        known = self._by_object.get(id(image))
        if known is None:
            digest = hashlib.sha1(image.tobytes()).hexdigest()
            known = f"{image.mode}:{image.size[0]}x{image.size[1]}:{digest}"
            self._by_object[id(image)] = known
            self._alive.append(image)
        return known
