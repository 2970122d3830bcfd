"""Fast continuation scoring: run each shared prefix once, score every condition against its KV cache.

The conditions of one item differ only after the image and the fixed instruction
(``mmspubench.eval.prompts`` puts the attribute text last). The plain scorer runs the vision tower
and the whole prompt once per condition; this one groups the requests of a call by image and
shared token prefix (``mmspubench.eval.backends.transformers.prefix_plan``) and makes two passes per group of groups:

1. the prefix pass: each shared prefix (system text, image, fixed text) once, with the cache on;
   prefixes of equal length from different items share the pass;
2. the suffix pass: for each group, the remaining tokens of all its requests packed one after
   another into ONE row that continues the group's cached prefix. A custom 4-D attention mask lets
   each request's tokens see the prefix and their own earlier tokens only, and its position ids
   continue the prefix, so every row computes what a separate full pass would. Nothing is copied:
   the group's cache row is used once, as is, instead of being repeated per condition (on a CPU,
   copying the cache per condition cost as much as the compute it saved).

The score is the same quantity as the plain scorer's: the sum of float32 log-probabilities over
exactly the continuation tokens of ``tokenize(context + continuation)``, after the check that
``tokenize(context)`` is a prefix of it (both scorers encode with ``mmspubench.eval.modelio.encoding``).

Reuse is exact only where a token's hidden states depend on earlier tokens alone, the cache is a
per-layer key/value store and the attention takes a custom mask (``sdpa``, ``eager``). Which
families qualify, and the named reason for every other model, is ``mmspubench.eval.backends.transformers.fast_families``;
those go through the plain scorer, as does a call with a request longer than a sliding window
(:func:`call_fallback_reason`, noted on the adapter). The adapter asks
:func:`fallback_reason` once, when the model is loaded; results.json records the scorer that ran
(``model.scorer_used``) and the reason (``model.scorer_fallback_reason``), and each fallback is
logged once per family.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.eval.backends.transformers.fast_families import (
    EXACT_FAMILIES,
    FALLBACKS,
    NOT_VERIFIED,
    call_fallback_reason,
    fallback_reason,
)
from mmspubench.eval.backends.transformers.prefix_plan import Plan, TokenView, make_plan
from mmspubench.eval.modelio.encoding import Encoded, ImageKeys, ScoringModel, encode, encode_all, to_model

__all__ = [
    "EXACT_FAMILIES",
    "FALLBACKS",
    "NOT_VERIFIED",
    "CallNotExact",
    "Encoded",
    "call_fallback_reason",
    "encode",
    "encode_all",
    "fallback_reason",
    "log_fallback",
    "plan_call",
    "score_fast",
]

if TYPE_CHECKING:
    import torch
    from mmspubench.eval.protocol import ScoreRequest

logger = logging.getLogger(__name__)

_logged: set[str] = set()


class CallNotExact(Exception):
    """A call the fast scorer would not score exactly (the message says why); score it plain."""


def score_fast(adapter: ScoringModel, requests: Sequence[ScoreRequest]) -> list[float]:
    """Scores equal to the plain scorer's, computing each shared prefix once (see module doc).

    Only for a model whose :func:`fallback_reason` is ``None``: the adapter decides that once, when
    the model is loaded, and sends the other models to the plain scorer. Raises
    :class:`CallNotExact` for a call that reuse would not score exactly (a request longer than a
    sliding window); the adapter scores that call with the plain scorer.
    """
    if not requests:
        return []
    model = adapter.model
    encoded = encode_all(adapter, requests)
    reason = call_fallback_reason(model, (int(enc.ids.shape[0]) for enc in encoded))
    if reason is not None:
        raise CallNotExact(reason)
    plan = plan_call(model, encoded, requests, batch_size=int(getattr(adapter, "batch_size", 1)))
    scores = [0.0] * len(requests)
    for chunk_index in range(len(plan.chunks)):
        _run_chunk(adapter, plan, chunk_index, encoded, scores)
    return scores


def plan_call(
    model: Any, encoded: Sequence[Encoded], requests: Sequence[ScoreRequest], *, batch_size: int
) -> Plan:
    """The plan for encoded requests (exposed for the benchmark's token counts)."""
    image_token = _image_token_id(model)
    keys = ImageKeys()
    views = []
    for enc, request in zip(encoded, requests, strict=True):
        ids = tuple(int(t) for t in enc.ids.tolist())
        hits = [i for i, t in enumerate(ids) if t == image_token]
        shapes = tuple((k, tuple(v.shape[1:])) for k, v in sorted(enc.image_inputs.items()))
        views.append(
            TokenView(
                ids=ids,
                n_context=enc.n_context,
                image_key=keys.key(request.image),
                last_image_index=hits[-1] if hits else -1,
                batch_key=shapes,
            )
        )
    return make_plan(views, prefix_batch=max(1, batch_size))


def log_fallback(family: str, reason: str) -> None:
    """Warn once per family that it is scored by the plain scorer, and why."""
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


def _run_chunk(
    adapter: Any, plan: Plan, chunk_index: int, encoded: Sequence[Encoded], scores: list[float]
) -> None:
    """One prefix pass over the chunk's groups, then its packed suffix passes; fills ``scores``."""
    import torch

    model = adapter.model
    chunk = plan.chunks[chunk_index]
    groups = [plan.groups[g] for g in chunk.groups]
    prefix_len = groups[0].prefix_len
    reps = [encoded[group.members[0]] for group in groups]
    inputs: dict[str, Any] = {
        name: torch.cat([rep.image_inputs[name] for rep in reps]) for name in reps[0].image_inputs
    }
    for name in reps[0].token_inputs:
        inputs[name] = torch.cat([rep.token_inputs[name][:, :prefix_len] for rep in reps])
    ids = torch.stack([rep.ids[:prefix_len] for rep in reps])
    inputs.update(input_ids=ids, attention_mask=torch.ones_like(ids))
    extra: dict[str, Any] = {"logits_to_keep": 1} if adapter.accepts_logits_to_keep else {}
    with torch.inference_mode():
        out = model(
            **to_model(inputs, model),
            position_ids=_positions(reps, 0, prefix_len, model.device),
            use_cache=True,
            **{_cache_kwarg(model.forward): _prefix_cache()},
            **extra,
        )
        last = out.logits[:, -1].float().log_softmax(-1)
        members = [[encoded[i] for i in group.members] for group in groups]
        layers = [(layer.keys, layer.values) for layer in _output_cache(out).layers]
        del out
        for first, end, width in chunk.suffix_passes:
            packed = _pack(members[first:end], prefix_len, width, adapter.pad_token_id, model)
            suffix = _suffix_log_probs(adapter, packed, _cache_rows(layers, first, end)) if width else None
            for row in range(first, end):
                for index, enc, start in zip(
                    groups[row].members, members[row], packed.starts[row - first], strict=True
                ):
                    scores[index] = _continuation_sum(
                        enc, prefix_len, start, last[row], suffix, packed, row - first
                    )


def _cache_kwarg(forward: Any) -> str:
    """Name of the cache argument of a ``forward``: ``cache`` from transformers 5.2x on,
    ``past_key_values`` before (e.g. 5.19, the version vLLM pins)."""
    import inspect

    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def _output_cache(out: Any) -> Any:
    """The cache a forward pass returned, under either name (see :func:`_cache_kwarg`)."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def _prefix_cache() -> Any:
    """An empty cache whose layers keep the prefix keys/values as computed, without a copy."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class StoreLayer(DynamicLayer):
        """A dynamic layer whose first update stores its tensors instead of concatenating them to nothing."""

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
            if self.is_initialized:
                return super().update(key_states, value_states, *args, **kwargs)
            self.lazy_initialization(key_states, value_states)
            self.keys, self.values = key_states, value_states
            return self.keys, self.values

    cache = DynamicCache()
    cache.layer_class_to_replicate = StoreLayer
    return cache


def _cache_rows(layers: Sequence[tuple[torch.Tensor, torch.Tensor]], first: int, end: int) -> Any:
    """A cache holding rows ``first:end`` of the prefix keys/values (views: the pass's update copies once)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache()
    for keys, values in layers:
        layer = DynamicLayer()
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys[first:end], values[first:end]
        cache.layers.append(layer)
    return cache


@dataclass(frozen=True, slots=True)
class _Packed:
    """The suffix pass of a chunk: each group's feeds one after another in one row."""

    ids: torch.Tensor
    """``(groups, width)`` token ids, padded on the right."""
    positions: torch.Tensor
    """Position ids of the packed tokens (each feed continues the prefix)."""
    mask: torch.Tensor
    """``(groups, 1, width, prefix + width)`` additive mask: a feed sees the prefix and its own past."""
    starts: list[list[int]]
    """Column where each member's feed starts in its row (its feed may be empty)."""
    needed: dict[tuple[int, int], int]
    """(row, column) of every position that predicts a continuation token -> its index in the head's output."""
    token_inputs: dict[str, torch.Tensor]
    """Per-token inputs the suffix pass carries (:data:`SUFFIX_TOKEN_INPUTS`), packed like ``ids``."""


SUFFIX_TOKEN_INPUTS = ("cross_attention_mask",)
"""Per-token processor outputs the suffix pass needs too: Mllama's text tokens reach the image
through cross-attention layers (their keys/values are in the prefix cache), and this mask says
which image tiles each token sees. Other per-token outputs (token types) only shape the prefix."""


def _pack(
    members: Sequence[Sequence[Encoded]], prefix_len: int, width: int, pad_id: int, model: Any
) -> _Packed:
    """Pack each group's feeds into one row and build its mask, positions and needed columns."""
    import torch

    device, dtype = model.device, model.dtype
    if width == 0:  # nothing to feed: every score comes from the prefix pass
        empty = torch.empty(0)
        return _Packed(
            ids=empty,
            positions=empty,
            mask=empty,
            starts=[[0] * len(g) for g in members],
            needed={},
            token_inputs={},
        )
    ids = torch.full((len(members), width), pad_id, dtype=torch.long)
    blocked = torch.finfo(dtype).min
    mask = torch.full((len(members), 1, width, prefix_len + width), blocked, dtype=dtype)
    mask[..., :prefix_len] = 0  # every query sees the whole prefix (padding queries too: no empty rows)
    starts: list[list[int]] = []
    position_rows = []
    needed: dict[tuple[int, int], int] = {}
    for row, group in enumerate(members):
        column, row_starts, parts = 0, [], []
        packed_at: dict[tuple[int, ...], tuple[int, Encoded]] = {}
        for enc in group:
            n = enc.ids.shape[0] - 1 - prefix_len
            feed = tuple(int(t) for t in enc.ids[prefix_len:-1].tolist())
            if n > 0 and feed in packed_at:  # an equal feed is already packed: share its positions
                shared_at, first = packed_at[feed]
                _check_same_feed(first, enc, prefix_len)
                row_starts.append(shared_at)
                for col in range(shared_at + max(0, enc.n_context - 1 - prefix_len), shared_at + n):
                    needed.setdefault((row, col), len(needed))
                continue
            row_starts.append(column)
            if n <= 0:
                continue
            packed_at[feed] = (column, enc)
            ids[row, column : column + n] = enc.ids[prefix_len:-1]
            causal = torch.ones(n, n, dtype=torch.bool).tril()
            block = mask[row, 0, column : column + n, prefix_len + column : prefix_len + column + n]
            block.masked_fill_(causal, 0)
            parts.append(_positions([enc], prefix_len, n, "cpu"))
            for col in range(column + max(0, enc.n_context - 1 - prefix_len), column + n):
                needed.setdefault((row, col), len(needed))
            column += n
        starts.append(row_starts)
        if not parts:  # every feed of this group is empty: a row of padding
            parts.append(_positions([group[0]], prefix_len, 1, "cpu"))
        position_rows.append(_pad_positions(parts, width))
    positions = torch.cat(position_rows, dim=-2)
    return _Packed(
        ids=ids.to(device),
        positions=positions.to(device),
        mask=mask.to(device),
        starts=starts,
        needed=needed,
        token_inputs={k: v.to(device) for k, v in _pack_token_inputs(members, prefix_len, width).items()},
    )


def _check_same_feed(first: Encoded, enc: Encoded, prefix_len: int) -> None:
    """Two requests share packed positions only when their feeds' positions and per-token inputs
    are equal too (they are, after the same image and head: refuse the call otherwise)."""
    import torch

    same = _positions([first], prefix_len, enc.ids.shape[0] - 1 - prefix_len, "cpu").equal(
        _positions([enc], prefix_len, enc.ids.shape[0] - 1 - prefix_len, "cpu")
    )
    for name in SUFFIX_TOKEN_INPUTS:
        if name in enc.token_inputs:
            same = same and torch.equal(
                first.token_inputs[name][0, prefix_len:-1], enc.token_inputs[name][0, prefix_len:-1]
            )
    if not same:
        raise CallNotExact("two equal feeds differ in their positions or per-token inputs")


def _pack_token_inputs(
    members: Sequence[Sequence[Encoded]], prefix_len: int, width: int
) -> dict[str, torch.Tensor]:
    """The :data:`SUFFIX_TOKEN_INPUTS` of each feed, packed one after another per row, zero-padded."""
    import torch

    packed: dict[str, torch.Tensor] = {}
    for name in SUFFIX_TOKEN_INPUTS:
        if name not in members[0][0].token_inputs:
            continue
        rows = []
        for group in members:
            parts = [enc.token_inputs[name][0, prefix_len:-1] for enc in _distinct_feeds(group, prefix_len)]
            row = torch.cat(parts) if parts else members[0][0].token_inputs[name][0, :0]
            pad = torch.zeros((width - row.shape[0], *row.shape[1:]), dtype=row.dtype)
            rows.append(torch.cat([row, pad]))
        packed[name] = torch.stack(rows)
    return packed


def _distinct_feeds(group: Sequence[Encoded], prefix_len: int) -> list[Encoded]:
    """The members whose feed is packed (the first of each set of equal feeds), in order."""
    seen: set[tuple[int, ...]] = set()
    out = []
    for enc in group:
        feed = tuple(int(t) for t in enc.ids[prefix_len:-1].tolist())
        if feed not in seen:
            seen.add(feed)
            out.append(enc)
    return out


def _pad_positions(parts: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    """Concatenate one row's position pieces and pad it to ``width`` by counting on (padding is masked)."""
    import torch

    row = torch.cat(list(parts), dim=-1)
    missing = width - row.shape[-1]
    if missing > 0:
        row = torch.cat([row, row[..., -1:] + torch.arange(1, missing + 1)], dim=-1)
    return row


def _suffix_log_probs(adapter: Any, packed: _Packed, cache: Any) -> torch.Tensor:
    """float32 log-softmax at the needed (row, column) positions, continuing the prefix cache.

    The output head runs on those positions only: rows need different columns, and a column range
    common to all rows would turn most of the packed tokens into full-vocabulary logits.
    """
    import torch

    model = adapter.model
    out = model.model(
        input_ids=packed.ids,
        attention_mask=packed.mask,
        position_ids=packed.positions,
        use_cache=True,
        **packed.token_inputs,
        **{_cache_kwarg(model.model.forward): cache},
    )
    rows = torch.tensor([row for row, _ in packed.needed], device=model.device)
    columns = torch.tensor([col for _, col in packed.needed], device=model.device)
    hidden = out.last_hidden_state[rows, columns]
    return model.get_output_embeddings()(hidden).float().log_softmax(-1)


def _continuation_sum(
    enc: Encoded,
    prefix_len: int,
    start: int,
    last: torch.Tensor,
    suffix: torch.Tensor | None,
    packed: _Packed,
    row: int,
) -> float:
    """Sum of the log-probabilities of ``enc``'s continuation tokens.

    Token ``j`` is predicted at sequence position ``j - 1``: the prefix's last position for
    ``j == prefix_len``, else packed column ``start + j - 1 - prefix_len``.
    """
    import torch

    total = torch.zeros((), dtype=torch.float32, device=last.device)
    targets = enc.ids[enc.n_context :].to(last.device)
    first = enc.n_context
    if first == prefix_len:
        total = total + last[targets[0]]
        targets, first = targets[1:], first + 1
    if targets.shape[0]:
        if suffix is None:
            raise RuntimeError("continuation tokens after the prefix but no suffix pass was planned")
        first_column = start + first - 1 - prefix_len
        kept = [packed.needed[(row, first_column + k)] for k in range(targets.shape[0])]
        picked = suffix[torch.tensor(kept, device=last.device)].gather(-1, targets[:, None])
        total = total + picked.sum()
    return float(total)
