"""Fast continuation scoring: run each shared prefix once, score every condition against its KV cache.

The conditions of one item differ only after the image and the fixed instruction
(``mmspubench.eval.prompts`` puts the attribute text last). The plain scorer runs the vision tower
and the whole prompt once per condition; this one groups the requests of a call by image and
shared token prefix (``mmspubench.eval.prefix_plan``), runs each prefix once with the cache on,
copies the cache rows over the group's requests and scores all suffixes + continuations in one
right-padded batch whose attention mask covers the prefix and whose position ids continue it.
Prefixes of equal length from different items share one pass.

The score is the same quantity as the plain scorer's: the sum of float32 log-probabilities over
exactly the continuation tokens of ``tokenize(context + continuation)``, after the check that
``tokenize(context)`` is a prefix of it (the adapter's encode step does that check for both).

Reuse is exact only where a token's hidden states depend on earlier tokens alone and the cache is
a plain per-layer key/value store. Families outside :data:`EXACT_FAMILIES` go through the plain
scorer; :data:`FALLBACKS` names the known ones and why; any other family falls back as
"not verified". Each fallback is logged once per family.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.eval.prefix_plan import Plan, TokenView, make_plan

if TYPE_CHECKING:
    import torch
    from mmspubench.eval.protocol import ScoreRequest

logger = logging.getLogger(__name__)

EXACT_FAMILIES: frozenset[str] = frozenset({"llava", "qwen2_vl", "idefics3", "smolvlm"})
"""``config.model_type`` values whose cache reuse is tested equal to plain scoring."""

FALLBACKS: dict[str, str] = {
    "paligemma": "prefix-LM mask: the prompt attends bidirectionally, so its states depend on later prompt tokens",
    "gemma3": "image tokens attend bidirectionally and layers use sliding windows; reuse not verified exact",
    "mllama": "image enters through cross-attention layers whose states the reused cache does not hold",
    "llava_next": "tiles and unpadding differ per image size; reuse not verified exact",
}
"""Known families scored by the plain scorer, with the reason."""

NOT_VERIFIED = "family not verified exact for prefix-cache reuse"
"""Reason given for a family in neither table."""

SLIDING_WINDOW = "language model has sliding-window or non-standard cache layers"
"""Reason given when a listed family's language model is configured with non-plain cache layers."""

ROWS_PER_PREFIX = 8
"""Suffix rows per pass = this times the batch size (a typical item has 2 to 10 conditions)."""

_logged: set[str] = set()


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


def fallback_reason(model: Any) -> str | None:
    """Why ``model`` must use the plain scorer, or None when the fast path is exact for it."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    family = str(getattr(model.config, "model_type", ""))
    if family in FALLBACKS:
        return FALLBACKS[family]
    if family not in EXACT_FAMILIES:
        return NOT_VERIFIED
    layers = DynamicCache(config=model.config).layers
    if any(type(layer) is not DynamicLayer for layer in layers):
        return SLIDING_WINDOW
    return None


def score_fast(adapter: Any, requests: Sequence[ScoreRequest]) -> list[float]:
    """Scores equal to the plain scorer's, computing each shared prefix once (see module doc)."""
    from mmspubench.eval import scoring

    if not requests:
        return []
    model = adapter.model
    reason = fallback_reason(model)
    if reason is not None:
        _log_fallback(str(getattr(model.config, "model_type", "?")), reason)
        return list(scoring.score_plain(adapter, requests))
    encoded = [encode(adapter, request) for request in requests]
    plan = plan_call(model, encoded, requests, batch_size=int(getattr(adapter, "batch_size", 1)))
    scores = [0.0] * len(requests)
    for chunk_index in range(len(plan.chunks)):
        _run_chunk(adapter, plan, chunk_index, encoded, scores)
    return scores


def plan_call(model: Any, encoded: Sequence[Encoded], requests: Sequence[ScoreRequest], *, batch_size: int) -> Plan:
    """The plan for encoded requests (exposed for the benchmark's token counts)."""
    image_token = _image_token_id(model)
    keys = _ImageKeys()
    views = []
    for enc, request in zip(encoded, requests, strict=True):
        ids = tuple(int(t) for t in enc.ids.tolist())
        hits = [i for i, t in enumerate(ids) if t == image_token]
        shapes = tuple((k, tuple(v.shape[1:])) for k, v in sorted(enc.image_inputs.items()))
        views.append(TokenView(ids=ids, n_context=enc.n_context, image_key=keys.key(request.image),
                               last_image_index=hits[-1] if hits else -1, batch_key=shapes))
    size = max(1, batch_size)
    return make_plan(views, prefix_batch=size, row_batch=ROWS_PER_PREFIX * size)


def _log_fallback(family: str, reason: str) -> None:
    if family not in _logged:
        _logged.add(family)
        logger.warning("fast scorer: %s scored with the plain scorer (%s)", family, reason)


def _image_token_id(model: Any) -> int:
    config = model.config
    for name in ("image_token_id", "image_token_index"):
        value = getattr(config, name, None)
        if value is not None:
            return int(value)
    raise ValueError(f"{type(model).__name__}: config has no image token id")


class _ImageKeys:
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


def encode(adapter: Any, request: ScoreRequest) -> Encoded:
    """Encode one request with the adapter's encode step (the plain scorer's), split for reuse."""
    from mmspubench.eval.hooks import SEQUENCE_KEYS
    from mmspubench.eval.scoring import to_model

    enc = adapter.encode(request)
    token_inputs = {k: v for k, v in enc.inputs.items() if k in SEQUENCE_KEYS and k not in ("input_ids", "attention_mask")}
    image_inputs = {k: v for k, v in enc.inputs.items() if k not in SEQUENCE_KEYS}
    positions = adapter.hooks.position_ids(adapter.model, to_model(enc.inputs, adapter.model))
    return Encoded(ids=enc.inputs["input_ids"][0], n_context=enc.n_context, token_inputs=token_inputs,
                   image_inputs=image_inputs, positions=None if positions is None else positions.cpu())


def _positions(encoded: Sequence[Encoded], start: int, width: int, device: Any) -> torch.Tensor:
    """Position ids ``start .. start + width`` of each sequence, padded rows continuing the count."""
    import torch

    rows = []
    for enc in encoded:
        if enc.positions is None:
            rows.append(torch.arange(start, start + width, device=device)[None, None])
            continue
        part = enc.positions[:, :, start : start + width].to(device)
        missing = width - part.shape[-1]
        if missing > 0:
            tail = part[:, :, -1:] + torch.arange(1, missing + 1, device=device)
            part = torch.cat([part, tail], dim=-1)
        rows.append(part)
    stacked = torch.cat(rows, dim=1)  # (3 or 1, batch, width)
    return stacked if any(enc.positions is not None for enc in encoded) else stacked[0]


def _run_chunk(adapter: Any, plan: Plan, chunk_index: int, encoded: Sequence[Encoded], scores: list[float]) -> None:
    """One prefix pass over the chunk's groups, then its suffix passes; fills ``scores``."""
    import torch
    from mmspubench.eval.scoring import to_model

    model = adapter.model
    chunk = plan.chunks[chunk_index]
    groups = [plan.groups[g] for g in chunk.groups]
    prefix_len = groups[0].prefix_len
    reps = [encoded[group.members[0]] for group in groups]
    inputs: dict[str, Any] = {name: torch.cat([rep.image_inputs[name] for rep in reps]) for name in reps[0].image_inputs}
    for name in reps[0].token_inputs:
        inputs[name] = torch.cat([rep.token_inputs[name][:, :prefix_len] for rep in reps])
    ids = torch.stack([rep.ids[:prefix_len] for rep in reps])
    inputs.update(input_ids=ids, attention_mask=torch.ones_like(ids))
    extra: dict[str, Any] = {"logits_to_keep": 1} if adapter.accepts_logits_to_keep else {}
    with torch.inference_mode():
        out = model(**to_model(inputs, model), position_ids=_positions(reps, 0, prefix_len, model.device),
                    use_cache=True, **extra)
        last = out.logits[:, -1].float().log_softmax(-1)
        layers = [(layer.keys, layer.values) for layer in out.cache.layers]
        del out
        slot = {g: j for j, g in enumerate(chunk.groups)}
        for group, g in zip(groups, chunk.groups, strict=True):
            for i in group.members:
                if encoded[i].ids.shape[0] - 1 == prefix_len:  # one scored token, predicted by the prefix
                    scores[i] = float(last[slot[g], int(encoded[i].ids[prefix_len])])
        for batch in chunk.row_batches:
            slots = torch.tensor([slot[plan.group_of[i]] for i in batch], device=model.device)
            rows = [encoded[i] for i in batch]
            for index, value in zip(batch, _run_rows(adapter, rows, prefix_len, layers, slots, last), strict=True):
                scores[index] = value


def _run_rows(adapter: Any, rows: Sequence[Encoded], prefix_len: int, layers: list[tuple[torch.Tensor, torch.Tensor]],
              slots: torch.Tensor, last: torch.Tensor) -> list[float]:
    """One suffix pass: each row continues its group's cached prefix; its continuation's log-prob sum."""
    import torch
    from transformers import DynamicCache

    model = adapter.model
    device = model.device
    width = max(enc.ids.shape[0] - 1 - prefix_len for enc in rows)
    feed = torch.full((len(rows), width), adapter.pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(rows), prefix_len + width, dtype=torch.long)
    mask[:, :prefix_len] = 1
    for r, enc in enumerate(rows):
        part = enc.ids[prefix_len:-1]
        feed[r, : part.shape[0]] = part
        mask[r, prefix_len : prefix_len + part.shape[0]] = 1
    # Token j is predicted at position j - 1; suffix position k is sequence position prefix_len + k.
    # Only the positions that predict a continuation token of some row are turned into logits.
    lo = max(0, min(enc.n_context - 1 - prefix_len for enc in rows))
    extra: dict[str, Any] = {}
    if adapter.accepts_logits_to_keep:
        extra["logits_to_keep"] = torch.arange(lo, width, device=device)
    # Each row gets its own copy of its group's prefix keys/values (index_select copies).
    cache = DynamicCache([(k.index_select(0, slots), v.index_select(0, slots)) for k, v in layers])
    out = model(input_ids=feed.to(device), attention_mask=mask.to(device), cache=cache, use_cache=True,
                position_ids=_positions(rows, prefix_len, width, device), **extra)
    logits = out.logits if adapter.accepts_logits_to_keep else out.logits[:, lo:]
    del out, cache
    logprobs = logits.float().log_softmax(-1)
    scores = []
    for r, enc in enumerate(rows):
        targets = enc.ids[enc.n_context :].to(device)
        start = enc.n_context - 1 - prefix_len - lo
        total = torch.zeros((), dtype=torch.float32, device=device)
        if start < 0:  # the first continuation token is predicted by the prefix's last position
            total = total + last[slots[r], targets[0]]
            targets, start = targets[1:], 0
        picked = logprobs[r, start : start + targets.shape[0]].gather(-1, targets[:, None])
        scores.append(float(total + picked.sum()))
    return scores
