"""ZeroGPU: the live-model handlers run inside ``spaces.GPU`` when the ``spaces`` package is there.

On the Hub's ZeroGPU hardware a GPU is attached only for the length of a call decorated with
``@spaces.GPU``; outside the Hub (or without ``SPACES_ZERO_GPU``) the decorator does nothing.
Without the package the handlers are returned unchanged, so a local or CPU Space behaves exactly
as before. Models follow the ZeroGPU rules: loaded on the CPU, and moved to ``cuda`` inside the
decorated call (``live_device``), where ZeroGPU has attached the GPU.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

LIVE_RUN_SECONDS = 60
"""``duration`` of a live run (answer, option probabilities and every CGLA condition of one item).
Measured with the bundled model on a shared 2-core CPU: 12 s for the first call (the model built
and loaded inside it), 2.8 s after. A GPU runs the small Hub models in a few seconds once loaded;
60 s leaves room for a first call that loads a SmolVLM; a shorter duration ranks a visitor
higher in ZeroGPU's queue. (Not yet measured on ZeroGPU itself.)"""
LIVE_CGLA_SECONDS = 45
"""``duration`` of a live CGLA view (the CGLA conditions alone; no answer generated)."""
GPU_HANDLERS: dict[str, int] = {"run_model": LIVE_RUN_SECONDS, "show_cgla": LIVE_CGLA_SECONDS}
"""The handlers that take a GPU, by name, and their durations; every other handler is CPU-only."""


def _spaces() -> Any:
    try:
        return importlib.import_module("spaces")
    except ImportError:
        return None


def on_gpu(handler: F) -> F:
    """``handler`` decorated with ``spaces.GPU(duration=...)`` when it is a GPU handler and the
    ``spaces`` package is importable; ``handler`` itself otherwise."""
    duration = GPU_HANDLERS.get(handler.__name__)
    spaces = _spaces()
    if duration is None or spaces is None:
        return handler
    decorated: F = spaces.GPU(duration=duration)(handler)
    return decorated


def zero_gpu() -> bool:
    """Whether the app runs on ZeroGPU hardware (``SPACES_ZERO_GPU`` set and ``spaces`` importable)."""
    return bool(os.environ.get("SPACES_ZERO_GPU")) and _spaces() is not None


def live_device() -> str:
    """Where live models run: ``cuda`` on ZeroGPU (moved inside the decorated call), else ``cpu``."""
    return "cuda" if zero_gpu() else "cpu"


def live_cgla_on_gpu(show_cgla: F) -> F:
    """``show_cgla`` whose live scoring runs inside ``spaces.GPU`` and whose reads of a results run
    do not (they need no GPU, and a ZeroGPU slot would queue a visitor for nothing)."""
    from mmspubench.space.handlers import LIVE_SOURCE

    on_device = on_gpu(show_cgla)
    if on_device is show_cgla:
        return show_cgla

    def dispatch(state: Any, item_id: Any, source: Any, model_choice: Any) -> Any:
        live = source == LIVE_SOURCE or not source
        return (on_device if live else show_cgla)(state, item_id, source, model_choice)

    dispatch.__name__ = show_cgla.__name__
    dispatch.__signature__ = inspect.signature(show_cgla)  # type: ignore[attr-defined]
    return dispatch  # type: ignore[return-value]
