"""The encode, collate and log-probability steps both continuation scorers share.

The plain scorer (``mmspubench.eval.backends.transformers.scoring``) and the fast scorer (``mmspubench.eval.backends.transformers.fast_scoring``)
are siblings that import this module; neither imports the other, and the adapter imports both.

CGL(c | t, v) is the sum of float32 log-probabilities of the continuation's tokens. Which tokens
those are is decided by the tokenizer, never assumed: the continuation tokens are the tokens of
tokenize(context + continuation) after those of tokenize(context), and that the context's tokens
are a prefix is checked (:func:`encode_request`). Nothing after the continuation is scored: the
continuation is appended after the assistant prefix with no chat-template end token, and special
tokens a tokenizer appends at the end (an EOS) are cut off.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.checkpoint import prefix_lm
from mmspubench.eval.checkpoint.hooks import SEQUENCE_KEYS, FamilyHooks
from mmspubench.eval.protocol import ScoreRequest

if TYPE_CHECKING:
    import torch


class ScoringModel(Protocol):
    """What a scorer reads from the adapter (``mmspubench.eval.backends.transformers.adapter.TransformersVLM``)."""

    model: Any
    """The ``PreTrainedModel`` in eval mode."""
    processor: Any
    """Its processor."""
    hooks: FamilyHooks
    """Family hooks (position ids)."""
    batch_size: int
    """Most sequences per forward pass."""
    pad_token_id: int
    """Token id used to pad ``input_ids``."""
    accepts_logits_to_keep: bool
    """Whether ``model.forward`` takes ``logits_to_keep``."""

    def add_special_tokens_for(self, text: str) -> bool:
        """Whether the tokenizer adds its special tokens to ``text``."""
        ...


def add_special_tokens_for(processor: Any, text: str) -> bool:
    """Whether the tokenizer should add its special tokens (BOS) to ``text``: not when the chat
    template already wrote the BOS at the start, so it is never doubled."""
    bos = processor.tokenizer.bos_token
    return not (bos and text.startswith(bos))


@dataclass(frozen=True, slots=True)
class EncodedRequest:
    """One score request after the processor: the model inputs and where the continuation starts."""

    inputs: Mapping[str, torch.Tensor]
    """Processor outputs for context + continuation, batch axis of size 1, unpadded, on CPU:
    ``input_ids``, ``attention_mask``, image tensors (``pixel_values``, ``image_grid_thw``,
    ``pixel_attention_mask``, ...) and any other per-token outputs (``token_type_ids``, ...)."""
    n_context: int
    """Number of tokens of the context alone; the continuation is ``input_ids[0, n_context:]``."""

    @property
    def n_tokens(self) -> int:
        """Number of tokens of context + continuation."""
        return int(self.inputs["input_ids"].shape[1])

    @property
    def continuation_ids(self) -> list[int]:
        """Token ids of the continuation (the scored tokens)."""
        return [int(t) for t in self.inputs["input_ids"][0, self.n_context :]]


def _strip_trailing_special(ids: list[int], special: set[int]) -> int:
    """Length of ``ids`` without the special tokens a tokenizer appends at the end (e.g. EOS)."""
    n = len(ids)
    while n > 0 and ids[n - 1] in special:
        n -= 1
    return n


def _prefix_error(request: ScoreRequest, ctx: list[int], full: list[int], tokenizer: Any) -> MMSpuBenchError:
    at = next(
        (i for i, (a, b) in enumerate(zip(ctx, full, strict=False)) if a != b), min(len(ctx), len(full))
    )
    show = tokenizer.convert_ids_to_tokens
    return MMSpuBenchError(
        f"continuation {request.continuation!r} after context ending {request.context[-40:]!r}: the "
        f"context's {len(ctx)} tokens are not a prefix of the tokens of context + continuation "
        f"(first difference at token {at}: context has {show(ctx[at : at + 3])}, joined text has "
        f"{show(full[at : at + 3])}); the tokenizer merges text across the boundary, so the scored tokens "
        "would not be the continuation's. Put the separating space at the start of the continuation "
        "instead of the end of the context."
    )


def encode_request(processor: Any, request: ScoreRequest, *, add_special_tokens: bool) -> EncodedRequest:
    """Run the processor on context + continuation with the image and find the continuation tokens.

    The context is run through the processor with the same image too (image placeholders expand to
    a number of tokens that depends on the image), and its tokens must be a prefix of the joined
    text's tokens: otherwise :class:`MMSpuBenchError`. Raises the same error for a continuation
    that adds no token.
    """
    if prefix_lm.is_prefix_lm(processor):
        return prefix_lm.encode_prefix_lm(processor, request, add_special_tokens=add_special_tokens)
    full_text = request.context + request.continuation
    kwargs = {"return_tensors": "pt", "add_special_tokens": add_special_tokens}
    images = None if request.image is None else [request.image]  # None: a text-only (blind) prompt
    full = processor(images=images, text=[full_text], **kwargs)
    ctx = processor(images=images, text=[request.context], **kwargs)
    tokenizer = processor.tokenizer
    special = set(tokenizer.all_special_ids) - {getattr(processor, "image_token_id", None)}
    full_ids = [int(t) for t in full["input_ids"][0]]
    ctx_ids = [int(t) for t in ctx["input_ids"][0]]
    n_full = _strip_trailing_special(full_ids, special)
    n_ctx = _strip_trailing_special(ctx_ids, special)
    if full_ids[:n_ctx] != ctx_ids[:n_ctx]:
        tail = prefix_lm.appended_tail(ctx_ids[:n_ctx], full_ids[:n_full])
        if tail:
            raise prefix_lm.appended_text_error(
                request, tokenizer.convert_ids_to_tokens(ctx_ids[n_ctx - tail : n_ctx])
            )
        raise _prefix_error(request, ctx_ids[:n_ctx], full_ids[:n_full], tokenizer)
    if n_full <= n_ctx:
        raise MMSpuBenchError(
            f"continuation {request.continuation!r}: adds no token after the context; expected a non-empty text"
        )
    inputs = {
        k: (v[:, :n_full] if k in SEQUENCE_KEYS else v)
        for k, v in full.items()
        if k not in prefix_lm.DROPPED_OUTPUTS
    }
    return EncodedRequest(inputs=inputs, n_context=n_ctx)


def _pad_to(tensor: torch.Tensor, shape: Sequence[int], value: float, left: bool = False) -> torch.Tensor:
    import torch.nn.functional as F

    pad: list[int] = []
    for have, want in zip(reversed(tensor.shape), reversed(shape), strict=True):
        pad.extend([want - have, 0] if left else [0, want - have])
    return F.pad(tensor, pad, value=value) if any(pad) else tensor


def collate(
    encoded: Sequence[EncodedRequest], pad_token_id: int, *, padding_side: str = "right"
) -> dict[str, torch.Tensor]:
    """Batch encoded requests: per-token outputs padded (``input_ids`` with ``pad_token_id``, the
    rest with 0) on ``padding_side``; image outputs zero-padded to a common shape and concatenated
    along the first axis (that is how processors batch them, e.g. Qwen2-VL's flat patch list)."""
    import torch

    batch: dict[str, torch.Tensor] = {}
    keys = set(encoded[0].inputs)
    if any(set(e.inputs) != keys for e in encoded):  # e.g. a text-only request beside one with pixels
        raise ValueError("collate: the requests of one batch must have the same inputs")
    for key in encoded[0].inputs:
        parts = [e.inputs[key] for e in encoded]
        if key in SEQUENCE_KEYS:
            length = max(p.shape[1] for p in parts)
            value = pad_token_id if key == "input_ids" else 0
            left = padding_side == "left"
            batch[key] = torch.cat([_pad_to(p, (1, length, *p.shape[2:]), value, left) for p in parts])
        else:
            shape = [max(p.shape[d] for p in parts) for d in range(parts[0].dim())]
            batch[key] = torch.cat([_pad_to(p, [p.shape[0], *shape[1:]], 0) for p in parts])
    return batch


def to_model(batch: Mapping[str, torch.Tensor], model: Any) -> dict[str, torch.Tensor]:
    """Move a batch to the model's device; floating tensors (pixels) take the model's dtype."""
    return {
        k: v.to(model.device, dtype=model.dtype) if v.is_floating_point() else v.to(model.device)
        for k, v in batch.items()
    }


def continuation_logprob(
    log_probs: torch.Tensor, input_ids: torch.Tensor, start: int, end: int, offset: int
) -> float:
    """Sum of log-probabilities of ``input_ids[start:end]``; row ``p - offset`` of ``log_probs``
    holds the float32 log-distribution predicted at position ``p`` (the token at ``p + 1``)."""
    rows = log_probs[start - 1 - offset : end - 1 - offset]
    picked = rows.gather(-1, input_ids[start:end].to(rows.device).unsqueeze(-1))
    return float(picked.sum())


def forward_log_probs(
    adapter: ScoringModel, batch: Mapping[str, torch.Tensor], lo: int, hi: int
) -> torch.Tensor:
    """float32 log-softmax of the model's next-token logits at positions ``lo..hi-1`` of a batch.

    Positions come from the family hook. Only the needed positions are turned into logits when the
    model accepts ``logits_to_keep`` (the same head and soft-capping as a full pass, fewer rows).
    """
    import torch

    model = adapter.model
    inputs = to_model(batch, model)
    position_ids = adapter.hooks.position_ids(model, inputs)
    extra: dict[str, Any] = {"use_cache": False}
    if position_ids is not None:
        extra["position_ids"] = position_ids
    if adapter.accepts_logits_to_keep:
        extra["logits_to_keep"] = torch.arange(lo, hi, device=model.device)
    with torch.inference_mode():
        logits = model(**inputs, **extra).logits
    if not adapter.accepts_logits_to_keep:
        logits = logits[:, lo:hi]
    return torch.log_softmax(logits.float(), dim=-1)


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


def encode_all(adapter: ScoringModel, requests: Sequence[ScoreRequest]) -> list[Encoded]:
    """Encode a call's requests as the adapter's encode step does, processing each image once.

    ``adapter.encode`` is ``encode_request(adapter.processor, ...)``; here the processor's image
    processor is wrapped so that the same image object with the same options is processed once
    per call (every condition of an item carries the same image; the output depends on nothing
    else), so tokens and pixels are exactly the adapter's.
    """
    processor = copy.copy(adapter.processor)
    processor.image_processor = _OnceImageProcessor(adapter.processor.image_processor)
    return [encode(adapter, request, processor) for request in requests]


def encode(adapter: ScoringModel, request: ScoreRequest, processor: Any = None) -> Encoded:
    """Encode one request like the adapter's encode step (the plain scorer's), split for reuse."""
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
    """Equal keys for the same PIL object or identical pixels; each image hashed once per call.

    The key is the image's content (mode, size, pixel bytes, and a palette image's palette: two
    palette images with the same indices show different pixels), never the object: an intervened
    image that differs from the published one by one pixel gets another key, while the same pixels
    in two objects share one.
    """

    def __init__(self) -> None:
        self._by_object: dict[int, str] = {}
        self._alive: list[object] = []  # keeps ids stable during the call

    def key(self, image: Any) -> str:
        import hashlib

        known = self._by_object.get(id(image))
        if known is None:
            hasher = hashlib.sha1(image.tobytes())
            palette = image.getpalette() if image.mode in ("P", "PA") else None
            if palette is not None:  # the indices alone do not say which colours are shown
                hasher.update(b"palette:" + bytes(palette))
            digest = hasher.hexdigest()
            known = f"{image.mode}:{image.size[0]}x{image.size[1]}:{digest}"
            self._by_object[id(image)] = known
            self._alive.append(image)
        return known
