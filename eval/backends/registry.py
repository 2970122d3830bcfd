"""The one map from ``--backend`` names to their :class:`~mmspubench.eval.backends.plugin.Backend`.

Light: the declarations import no engine; each loader imports its engine when it runs.
"""

from __future__ import annotations

import dataclasses

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends import openai, vllm
from mmspubench.eval.backends.plugin import Backend
from mmspubench.eval.backends.transformers import BACKEND as TRANSFORMERS

REGISTRY: dict[str, Backend] = {}
"""Registered backends by name, in flag order (the first is the default)."""


def register(backend: Backend) -> None:
    """Add ``backend``; its option names may not be another backend's or the run config's."""
    from mmspubench.eval.config import RunConfig

    taken = {f.name for f in dataclasses.fields(RunConfig)}
    for other in REGISTRY.values():
        if other.name != backend.name:
            taken |= {f.name for f in dataclasses.fields(other.options)}
    clash = sorted(taken & {f.name for f in dataclasses.fields(backend.options)})
    if clash:
        raise ValueError(f"backend {backend.name!r}: option(s) {', '.join(clash)} already declared")
    REGISTRY[backend.name] = backend


def names() -> tuple[str, ...]:
    """The registered backends' names (the ``--backend`` choices)."""
    return tuple(REGISTRY)


def get_backend(name: str) -> Backend:
    """The backend called ``name``; one line naming the choices if there is none."""
    if name not in REGISTRY:
        raise MMSpuBenchError(f"--backend {name!r}: unknown; expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def owner_of(option_name: str) -> Backend | None:
    """The backend that declares the option ``option_name`` (``None``: no backend does)."""
    for backend in REGISTRY.values():
        if any(f.name == option_name for f in dataclasses.fields(backend.options)):
            return backend
    return None


REGISTRY.update({b.name: b for b in (TRANSFORMERS, vllm.BACKEND, openai.BACKEND)})
