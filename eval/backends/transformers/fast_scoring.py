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
``tokenize(context)`` is a prefix of it (both scorers encode with ``mmspubench.eval.checkpoint.encoding``).

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
from typing import TYPE_CHECKING, Any

from mmspubench.eval.backends.transformers.fast_families import (
    EXACT_FAMILIES,
    FALLBACKS,
    NOT_VERIFIED,
    call_fallback_reason,
    fallback_reason,
)
from mmspubench.eval.backends.transformers.prefix_plan import Plan, TokenView, make_plan
from mmspubench.eval.backends.transformers.suffix_packing import CallNotExact, Packed, pack, position_ids
from mmspubench.eval.checkpoint.encoding import Encoded, ImageKeys, ScoringModel, encode, encode_all, to_model

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
            position_ids=position_ids(reps, 0, prefix_len, model.device),
            use_cache=True,
            **{_cache_kwarg(model.forward): _prefix_cache()},
            **extra,
        )
        last = out.logits[:, -1].float().log_softmax(-1)
        members = [[encoded[i] for i in group.members] for group in groups]
        layers = [(layer.keys, layer.values) for layer in _output_cache(out).layers]
        del out
        for first, end, width in chunk.suffix_passes:
            packed = pack(members[first:end], prefix_len, width, adapter.pad_token_id, model)
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


def _suffix_log_probs(adapter: Any, packed: Packed, cache: Any) -> torch.Tensor:
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
    head = adapter.output_head  # the head the model's forward applies (probed when it was loaded)
    return head.apply(model, hidden).float().log_softmax(-1)


def _continuation_sum(
    enc: Encoded,
    prefix_len: int,
    start: int,
    last: torch.Tensor,
    suffix: torch.Tensor | None,
    packed: Packed,
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
