"""Plain continuation scoring: one full forward pass per (image, context + continuation).

The reference the fast scorer (``mmspubench.eval.backends.transformers.fast_scoring``) is tested equal to; both encode
with :func:`mmspubench.eval.checkpoint.encoding.encode_request` (see that module for which tokens are scored).
"""

from __future__ import annotations

from collections.abc import Sequence

from mmspubench.eval.checkpoint.encoding import (
    EncodedRequest,
    ScoringModel,
    collate,
    continuation_logprob,
    encode_request,
    forward_log_probs,
)
from mmspubench.eval.protocol import ScoreRequest

__all__ = ["score_plain"]


def score_plain(adapter: ScoringModel, requests: Sequence[ScoreRequest]) -> list[float]:
    """CGL of each request by full forward passes, ``adapter.batch_size`` requests per pass.

    Requests are encoded a window at a time (bounded memory for long runs) and grouped by length
    within the window to waste little padding; rows are padded on the right so each row's
    positions and attention are those of an unbatched pass.
    """
    scores: list[float] = []
    window = adapter.batch_size * _WINDOW_BATCHES
    for first in range(0, len(requests), window):
        scores.extend(
            _score_window(
                adapter,
                [
                    encode_request(
                        adapter.processor, r, add_special_tokens=adapter.add_special_tokens_for(r.context)
                    )
                    for r in requests[first : first + window]
                ],
            )
        )
    return scores


_WINDOW_BATCHES = 16
"""Batches encoded ahead in :func:`score_plain`."""


def _score_window(adapter: ScoringModel, encoded: Sequence[EncodedRequest]) -> list[float]:
    # A text-only request (the blind view's, image None) has no image inputs: it is batched only
    # with others of its kind, never padded into a batch with pixels (or one with pixels into its).
    order = sorted(range(len(encoded)), key=lambda i: (sorted(encoded[i].inputs), -encoded[i].n_tokens))
    scores = [0.0] * len(encoded)
    for chunk in _batches(order, [sorted(e.inputs) for e in encoded], adapter.batch_size):
        items = [encoded[i] for i in chunk]
        batch = collate(items, adapter.pad_token_id)
        lo = min(e.n_context for e in items) - 1
        hi = max(e.n_tokens for e in items) - 1
        log_probs = forward_log_probs(adapter, batch, lo, hi)
        for row, (index, item) in enumerate(zip(chunk, items, strict=True)):
            ids = batch["input_ids"][row]
            scores[index] = continuation_logprob(log_probs[row], ids, item.n_context, item.n_tokens, lo)
    return scores


def _batches(order: Sequence[int], kinds: Sequence[list[str]], size: int) -> list[list[int]]:
    """``order`` cut into batches of at most ``size`` indices, each of one kind of inputs."""
    batches: list[list[int]] = []
    for index in order:
        if not batches or len(batches[-1]) == size or kinds[batches[-1][0]] != kinds[index]:
            batches.append([])
        batches[-1].append(index)
    return batches
