"""Plan of a shared-prefix scoring call: which requests share a cached prefix, and the batches to run.

Pure Python, no torch: the fast scorer (``mmspubench.eval.backends.transformers.fast_scoring``) executes a plan, and the
benchmark reads its token counts. A request is known here only by its full token ids
(context + continuation), the number of context tokens, a key of its image and the index of its
last image token.

Rules that keep the reuse exact:

* Requests share a prefix only if they have the same image and the same tokens up to and including
  their last image token, so every image token lies inside the prefix and the image is encoded
  once, in the prefix pass; the suffix pass is plain text.
* The prefix is the longest common prefix of the group's token ids, cut so that it never reaches
  past any member's context: the first scored token of each request comes after it.
* A request feeds ``ids[prefix_len : len(ids) - 1]``: the logits that predict token ``j`` come
  from position ``j - 1``, so the last token is never fed; the logits of the prefix's last
  position are kept from the prefix pass.
* The feeds of a group are packed one after another into one row that continues the group's
  cached prefix; an attention mask lets each feed see the prefix and its own earlier tokens only.
  Equal feeds are packed once and shared (the four letters of one rotation of the options).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TokenView:
    """What planning needs to know about one encoded request."""

    ids: tuple[int, ...]
    """Token ids of context + continuation."""
    n_context: int
    """Number of leading ids that belong to the context (the rest are scored)."""
    image_key: Hashable
    """Equal for requests whose image (as given to the model) is the same."""
    last_image_index: int
    """Index of the last image token in ``ids`` (-1 when there is none)."""
    batch_key: Hashable
    """Equal for requests whose image tensors can be stacked in one prefix pass (their shapes)."""


@dataclass(frozen=True, slots=True)
class Group:
    """Requests scored against one cached prefix."""

    members: tuple[int, ...]
    """Indices of the requests (into the call's request list)."""
    prefix_len: int
    """Number of shared leading tokens run once."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One prefix pass over several groups, then one packed suffix pass (one row per group)."""

    groups: tuple[int, ...]
    """Indices into ``Plan.groups``; their prefixes have equal length and stackable images."""
    suffix_passes: tuple[tuple[int, int, int], ...]
    """Suffix passes as (first row, end row, width): contiguous rows of ``groups`` (ordered by packed
    width) covering every row, each padded to its widest row; a first pass of width 0 holds the rows
    with nothing to feed (their scores come from the prefix pass alone)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Groups, chunks and the token counts of a call."""

    groups: tuple[Group, ...]
    """Every group; each request is in exactly one."""
    chunks: tuple[Chunk, ...]
    """Execution order."""
    group_of: tuple[int, ...]
    """Group index of each request."""
    processed_tokens: int
    """Tokens the language model runs, padding included (prefix passes + suffix passes)."""


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def feed_len(view: TokenView, prefix_len: int) -> int:
    """Tokens a request feeds after the prefix: all but the last of its remaining ids."""
    return max(0, len(view.ids) - 1 - prefix_len)


def feed_of(view: TokenView, prefix_len: int) -> tuple[int, ...]:
    """The ids a request feeds after the prefix."""
    return view.ids[prefix_len : len(view.ids) - 1]


def row_width(views: Sequence[TokenView], prefix_len: int) -> int:
    """Packed width of a group's row: each distinct feed once. Requests whose feeds are equal (the
    four letters after one rotation's options) read their scores from the same positions."""
    return sum(len(feed) for feed in {feed_of(v, prefix_len) for v in views})


def group_requests(views: Sequence[TokenView]) -> tuple[list[Group], list[int]]:
    """Group requests by image and image-bearing head, then split each such bucket where it pays.

    Within a bucket (e.g. the CGLA conditions and the option letters of one item) the members are
    sorted by their ids; any set sharing a longer prefix is then a contiguous run, and
    :func:`split_runs` picks the runs that need the fewest tokens.
    """
    buckets: dict[tuple[Hashable, tuple[int, ...]], list[int]] = {}
    for index, view in enumerate(views):
        if not 0 <= view.n_context < len(view.ids):
            raise ValueError(f"request {index}: {view.n_context} context tokens of {len(view.ids)}")
        if view.last_image_index >= view.n_context:
            raise ValueError(f"request {index}: an image token lies in the continuation")
        head = view.ids[: view.last_image_index + 1]
        buckets.setdefault((view.image_key, head), []).append(index)
    groups: list[Group] = []
    group_of = [0] * len(views)
    for (_, head), members in buckets.items():
        ordered = sorted(members, key=lambda i: views[i].ids)
        for run in split_runs([views[i] for i in ordered], run_cost=len(head)):
            members_of_run = tuple(ordered[k] for k in run)
            for index in members_of_run:
                group_of[index] = len(groups)
            groups.append(
                Group(members=members_of_run, prefix_len=shared_prefix([views[i] for i in members_of_run]))
            )
    return groups, group_of


def shared_prefix(views: Sequence[TokenView]) -> int:
    """The prefix run once for ``views``: their common prefix, cut at the shortest context."""
    first = views[0].ids
    shared = min([len(first), *(common_prefix_len(first, v.ids) for v in views[1:])])
    return min(shared, *(v.n_context for v in views))


def split_runs(views: Sequence[TokenView], run_cost: int) -> list[range]:
    """Cut id-sorted ``views`` into contiguous runs minimising the tokens run, plus ``run_cost`` per run.

    ``run_cost`` stands for the work repeated by every extra run (the image tokens and the vision
    pass). Dynamic programming over the cut points: buckets hold one item's requests (tens).
    """
    n = len(views)
    best = [0.0] + [float("inf")] * n
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        prefix = len(views[end - 1].ids)
        context = views[end - 1].n_context
        for start in range(end - 1, -1, -1):
            if start < end - 1:
                prefix = min(prefix, common_prefix_len(views[start].ids, views[start + 1].ids))
            context = min(context, views[start].n_context)
            p = min(prefix, context)
            # the prefix, then each distinct feed once (+1: the last token of each is never fed)
            cost = best[start] + run_cost + p + row_width(views[start:end], p) + (end - start)
            if cost < best[end]:
                best[end], cut[end] = cost, start
    runs = []
    end = n
    while end > 0:
        runs.append(range(cut[end], end))
        end = cut[end]
    return runs[::-1]


PASS_OVERHEAD_TOKENS = 32
"""Padding tokens worth one more suffix pass (its fixed cost), when cutting rows into passes."""


def split_passes(widths: Sequence[int]) -> tuple[tuple[int, int, int], ...]:
    """Cut rows of ascending ``widths`` into contiguous passes minimising padded tokens plus
    :data:`PASS_OVERHEAD_TOKENS` per pass (dynamic programming; a chunk holds a few rows)."""
    first = next((k for k, w in enumerate(widths) if w > 0), len(widths))
    n = len(widths)
    best = {first: 0}
    cut: dict[int, int] = {}
    for end in range(first + 1, n + 1):
        best[end], cut[end] = min(
            (best[start] + PASS_OVERHEAD_TOKENS + (end - start) * widths[end - 1], start)
            for start in range(first, end)
        )
    passes = []
    end = n
    while end > first:
        passes.append((cut[end], end, widths[end - 1]))
        end = cut[end]
    if first > 0:
        passes.append((0, first, 0))
    return tuple(passes[::-1])


def make_plan(views: Sequence[TokenView], *, prefix_batch: int) -> Plan:
    """Plan a call: groups, then chunks of at most ``prefix_batch`` groups with equal prefix length."""
    if prefix_batch < 1:
        raise ValueError(f"batch size must be >= 1, got {prefix_batch}")
    groups, group_of = group_requests(views)
    by_shape: dict[tuple[int, Hashable], list[int]] = {}
    for g, group in enumerate(groups):
        by_shape.setdefault((group.prefix_len, views[group.members[0]].batch_key), []).append(g)
    chunks: list[Chunk] = []
    processed = 0
    for (prefix_len, _), same in by_shape.items():
        # Rows of similar packed width side by side keep the padding of each suffix pass small.
        same.sort(key=lambda g: row_width([views[i] for i in groups[g].members], prefix_len))
        for start in range(0, len(same), prefix_batch):
            chunk_groups = tuple(same[start : start + prefix_batch])
            widths = [row_width([views[i] for i in groups[g].members], prefix_len) for g in chunk_groups]
            passes = split_passes(widths)
            processed += prefix_len * len(chunk_groups) + sum((end - first) * w for first, end, w in passes)
            chunks.append(Chunk(groups=chunk_groups, suffix_passes=passes))
    return Plan(
        groups=tuple(groups), chunks=tuple(chunks), group_of=tuple(group_of), processed_tokens=processed
    )
