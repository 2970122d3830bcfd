"""The suffix pass of the fast scorer, packed: each group's remaining tokens one after another in
one row, with the 4-D mask, position ids and per-token inputs that make every row compute what a
separate full pass would (``fast_scoring`` runs the passes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.eval.checkpoint.encoding import Encoded

if TYPE_CHECKING:
    import torch


class CallNotExact(Exception):
    """A call the fast scorer would not score exactly (the message says why); score it plain."""


def position_ids(encoded: Sequence[Encoded], start: int, width: int, device: Any) -> torch.Tensor:
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


@dataclass(frozen=True, slots=True)
class Packed:
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


def pack(
    members: Sequence[Sequence[Encoded]], prefix_len: int, width: int, pad_id: int, model: Any
) -> Packed:
    """Pack each group's feeds into one row and build its mask, positions and needed columns."""
    import torch

    device, dtype = model.device, model.dtype
    if width == 0:  # nothing to feed: every score comes from the prefix pass
        empty = torch.empty(0)
        return Packed(
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
                check_same_feed(first, enc, prefix_len)
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
            parts.append(position_ids([enc], prefix_len, n, "cpu"))
            for col in range(column + max(0, enc.n_context - 1 - prefix_len), column + n):
                needed.setdefault((row, col), len(needed))
            column += n
        starts.append(row_starts)
        if not parts:  # every feed of this group is empty: a row of padding
            parts.append(position_ids([group[0]], prefix_len, 1, "cpu"))
        position_rows.append(pad_positions(parts, width))
    positions = torch.cat(position_rows, dim=-2)
    return Packed(
        ids=ids.to(device),
        positions=positions.to(device),
        mask=mask.to(device),
        starts=starts,
        needed=needed,
        token_inputs={k: v.to(device) for k, v in pack_token_inputs(members, prefix_len, width).items()},
    )


def check_same_feed(first: Encoded, enc: Encoded, prefix_len: int) -> None:
    """Two requests share packed positions only when their feeds' positions and per-token inputs
    are equal too (they are, after the same image and head: refuse the call otherwise)."""
    import torch

    same = position_ids([first], prefix_len, enc.ids.shape[0] - 1 - prefix_len, "cpu").equal(
        position_ids([enc], prefix_len, enc.ids.shape[0] - 1 - prefix_len, "cpu")
    )
    for name in SUFFIX_TOKEN_INPUTS:
        if name in enc.token_inputs:
            same = same and torch.equal(
                first.token_inputs[name][0, prefix_len:-1], enc.token_inputs[name][0, prefix_len:-1]
            )
    if not same:
        raise CallNotExact("two equal feeds differ in their positions or per-token inputs")


def pack_token_inputs(
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
            parts = [enc.token_inputs[name][0, prefix_len:-1] for enc in distinct_feeds(group, prefix_len)]
            row = torch.cat(parts) if parts else members[0][0].token_inputs[name][0, :0]
            pad = torch.zeros((width - row.shape[0], *row.shape[1:]), dtype=row.dtype)
            rows.append(torch.cat([row, pad]))
        packed[name] = torch.stack(rows)
    return packed


def distinct_feeds(group: Sequence[Encoded], prefix_len: int) -> list[Encoded]:
    """The members whose feed is packed (the first of each set of equal feeds), in order."""
    seen: set[tuple[int, ...]] = set()
    out = []
    for enc in group:
        feed = tuple(int(t) for t in enc.ids[prefix_len:-1].tolist())
        if feed not in seen:
            seen.add(feed)
            out.append(enc)
    return out


def pad_positions(parts: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    """Concatenate one row's position pieces and pad it to ``width`` by counting on (padding is masked)."""
    import torch

    row = torch.cat(list(parts), dim=-1)
    missing = width - row.shape[-1]
    if missing > 0:
        row = torch.cat([row, row[..., -1:] + torch.arange(1, missing + 1)], dim=-1)
    return row
