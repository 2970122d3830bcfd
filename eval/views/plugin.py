"""What a view declares to plug into ``mmspubench eval``: the contract of every ``--metrics`` name.

A view is one :class:`View` value (``VIEW``) in one package of this folder: its ``--metrics`` name,
what it needs (the multiple-choice answers, an answer mode, the model's text-only path, the
dataset's records), what it asks the model on top of the published question, what it adds to each
sample line and its one check of that part, its results.json section (recomputed from the samples
alone), its check against the published items at ``submit``, its report columns or tables and its
plot panels. :mod:`mmspubench.eval.views.registry` lists them in one line; adding a view is one
package that declares a ``View`` plus that line (or :func:`~mmspubench.eval.views.registry.register`).

Every hook is optional: ``accuracy`` and ``cgla`` are the runner's own two passes (the published
question and the CGL conditions) and declare only their sections, while a view that asks nothing
new (``calibration``) only reads the published answer. The declarations are light: a hook that
needs a heavy library (matplotlib for a plot) imports it when it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datasets
    from mmspubench.dataset_builder.schema import Item
    from mmspubench.eval.asking import Ask, Reply
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import Condition, SampleResult

__all__ = ["Chunk", "Column", "Part", "Plot", "View"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """What a view's ``take`` sees of one chunk of items once the model has answered."""

    items: Sequence[Item]
    """The chunk's items, in order."""
    published: Sequence[Reply]
    """Each item's answer to the published question."""
    replies: Sequence[Reply]
    """The answers to this view's own asks, in the order its ``asks`` returned them."""
    state: Any
    """What the view's ``prepare`` made for the chunk (``None`` without ``prepare``)."""
    conditions: Sequence[tuple[Condition, ...] | None]
    """Each item's CGLA conditions (``None`` in a run without ``cgla``)."""
    cgls: Sequence[tuple[tuple[float, ...], ...] | None]
    """Each item's CGLs under each of the view's ``cgla_images``, one tuple per image (``None``
    without ``cgla``)."""


@dataclass(frozen=True, slots=True)
class Part:
    """A view's key in each samples.jsonl line, written only in runs with the view (so that the
    lines of every other run stay byte for byte as they were)."""

    key: str
    """The line's key (``rotations``, ``blind``, ``interventions``)."""
    write: Callable[[Any], Any]
    """The part as JSON (lists and objects of plain values)."""
    read: Callable[[Any], Any]
    """The inverse of ``write`` for a non-null value; raises ``ValueError``/``TypeError`` naming the
    field on a malformed one (the reader adds the file, the line and the record)."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of ``mmspubench report``'s table, shown when some run of the table needs it."""

    header: str
    cell: Callable[[Mapping[str, Any]], str]
    """A run's results.json -> the cell's text."""
    shown: Callable[[Sequence[Mapping[str, Any]]], bool]
    """Whether the table of these runs shows the column."""


@dataclass(frozen=True, slots=True)
class Plot:
    """A view's panels in ``report --plot`` (below the accuracy and CGLA_acc panels)."""

    series: Callable[[Mapping[str, Any], Sequence[SampleResult] | None, str, str], Any]
    """``(results, samples, label, where)`` -> what the panels draw of one run (plain data, checked;
    ``samples``: the run's samples.jsonl where it is beside results.json, else ``None``)."""
    panels: Callable[[Sequence[Any]], list[str]]
    """The panels the runs have data for, in order (none: the view adds no panel)."""
    draw: Callable[[Any, str, Sequence[Any]], None]
    """``(axes, panel, series)``: draw one panel."""
    height: float
    """Inches per panel."""


def no_check(config: RunConfig) -> None:
    """A view without options of its own to cross-check."""


@dataclass(frozen=True, slots=True)
class View:
    """One ``--metrics`` name, as the registry holds it."""

    name: str
    """``--metrics`` name, and results.json's section key when it has a ``section``."""
    summary: str
    """One line for the docs and the registry's listing."""
    paper: bool = False
    """One of the paper's two (``accuracy``, ``cgla``): run when ``--metrics`` names none, its
    section always in results.json (null when not run) and range-checked at ``submit``."""
    needs_accuracy: bool = True
    """It reads the multiple-choice answers: ``--metrics`` must hold ``accuracy`` too."""
    answer_mode: str | None = None
    """The ``--answer-mode`` it needs (``calibration``: ``logprob``); ``None``: either."""
    confound: bool = False
    """A confound view: with it, results.json's ``accuracy`` adds ``worst_type``/``worst_gap``."""
    check: Callable[[RunConfig], None] = no_check
    """``(config)``: the view's own option cross-checks, one line each; called for every registered
    view, so that an option of a view the run does not compute is refused by its owner."""
    check_dataset: Callable[[datasets.Dataset, RunConfig, str], None] | None = None
    """``(dataset, config, where)``: what the view needs of the records, before the model loads."""
    check_model: Callable[[Any, RunConfig], None] | None = None
    """``(model, config)``: what the view needs of the loaded model (a text-only path)."""
    prepare: Callable[[Sequence[Item], RunConfig], Any] | None = None
    """``(items, config)`` -> the chunk's state, made once and handed to ``asks``, ``cgla_images``
    and ``take`` (the interventions' changed images)."""
    asks: Callable[[Sequence[Item], RunConfig, Any], list[Ask]] | None = None
    """``(items, config, state)`` -> the view's questions, put to the model in the same ONE
    ``generate`` or ``score`` call as the published ones (after them, in registry order)."""
    cgla_images: Callable[[Any], Sequence[Sequence[Any]]] | None = None
    """``(state)`` -> per item, the images its CGLA conditions are scored under too (with ``cgla``)."""
    take: Callable[[Chunk, RunConfig], Sequence[Any]] | None = None
    """``(chunk, config)`` -> each item's part of the sample (``None``: nothing to record)."""
    part: Part | None = None
    """Its key in samples.jsonl."""
    check_record: Callable[[Any, SampleResult, RunConfig], tuple[str, str] | None] | None = None
    """``(part, sample, config)`` -> ``(field, why)`` where the sample's part (not null) does not
    follow from itself or from the rest of the sample, else ``None``: the one semantic check of
    the part (``Part.read`` checks its shape), run on every sample at ``submit``."""
    section: Callable[[Sequence[SampleResult], RunConfig], Any] | None = None
    """``(samples in run order, config)`` -> results.json's section, recomputed from the lines alone
    after checking that each follows from itself (eval, ``submit``, the sweep and the Space call it)."""
    kept_on_rerun: bool = True
    """Its section is among the figures a rerun of a finished run must reproduce for the folder's
    results.json to be left as it is (the ``interventions`` section never was, and still is not)."""
    closing: Callable[[Mapping[str, Any]], str | None] | None = None
    """``(section)`` -> its part of ``eval``'s closing line (``None``: nothing to say)."""
    published: Callable[[datasets.Dataset, RunConfig, str], Mapping[str, Any]] | None = None
    """``(published split, config, where)`` -> per item id, what ``against_item`` checks beyond the
    item's fields (the interventions: the digest of each image eval shows), read once by ``submit``."""
    against_item: Callable[[SampleResult, Any, Any, RunConfig], tuple[str, str] | None] | None = None
    """``(sample, published item, its facts from published or None, config)`` -> ``(field, why)``
    where the part disagrees with the published split, else ``None`` (``submit``'s check)."""
    columns: tuple[Column, ...] = ()
    """Its ``report`` columns, after the table's own."""
    tables: Callable[..., list[str]] | None = None
    """``(runs, model_cell, cell)`` -> lines of its own ``report`` tables (none: no table)."""
    plot: Plot | None = None
    """Its ``report --plot`` panels."""
