"""The transformers backend: the adapter, its loader and its scorers (plain and fast), and its declaration.

It has no options of its own: ``--device``, ``--dtype``, ``--scorer`` and ``--trust-remote-code``
are the run's (:class:`~mmspubench.eval.config.RunConfig`), as they are recorded for every engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.eval.backends.plugin import Backend

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig


@dataclass(frozen=True, slots=True)
class Options:
    """No options beyond the run's."""


def _preflight(config: RunConfig, world: int) -> None:
    """Its packages are installed and the device exists (one line if not)."""
    from mmspubench.eval.extras import require

    require("--backend transformers (the default engine)", ["torch", "transformers"])
    from mmspubench.eval.backends.transformers.loading import torch_device_and_dtype

    torch_device_and_dtype(config.device, config.dtype)


def _load(config: RunConfig, device: str) -> Any:
    from mmspubench.eval.backends.transformers.loading import load_checked

    return load_checked(config, device)


def _thinks(config: RunConfig) -> bool:
    from mmspubench.eval.checkpoint.thinking import thinks_before_loading

    return thinks_before_loading(config)


BACKEND = Backend(
    name="transformers",
    options=Options,
    default_batch_size=8,
    load=_load,
    preflight=_preflight,
    thinks=_thinks,
)
