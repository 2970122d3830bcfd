"""What a backend declares to plug into ``mmspubench eval``: the contract of every engine.

A backend is one :class:`Backend` value: its name (``--backend NAME``), its ``Options`` (a frozen
dataclass whose fields are made with :func:`mmspubench.options.option`, so their flags, help,
defaults, type and range checks come from it), its default batch size, its checks and its loader.
:mod:`mmspubench.eval.backends.registry` maps names to them; adding a backend is one module that
declares a ``Backend`` plus one line there (or :func:`~mmspubench.eval.backends.registry.register`).
The run config is built and checked once and handed to ``check``, ``preflight`` and ``load``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig


def no_check(options: Any, config: RunConfig) -> None:
    """A backend whose options need no check beyond their fields' types and ranges."""


def no_preflight(config: RunConfig, world: int) -> None:
    """A backend that needs nothing of the machine before the data is read."""


@dataclass(frozen=True, slots=True)
class Backend:
    """One engine behind the model Protocol, as the registry holds it."""

    name: str
    """``--backend`` value; results.json's ``backend.name`` is the engine's own report (``describe``)."""
    options: type
    """Frozen dataclass of the engine's own options (``option()`` fields; names unique across backends)."""
    default_batch_size: int
    """Items per runner chunk when ``--batch-size`` is not given."""
    load: Callable[[RunConfig, str], Any]
    """``(config, device) -> VisionLanguageModel``: the run's config (model, batch size resolved) and
    this process's device."""
    check: Callable[[Any, RunConfig], None] = no_check
    """``(options, config)``: the cheap cross-checks of the options, one line each, before any work."""
    preflight: Callable[[RunConfig, int], None] = no_preflight
    """``(config, processes)``: what the machine must offer (packages, device, one process), before the data."""
    thinks: Callable[[RunConfig], bool] | None = None
    """``(config) -> bool``: whether the model thinks in generate mode, known before it loads (its
    default ``--max-new-tokens``); ``None``: only ``--thinking on`` says so (a server's template is unseen)."""
