"""The one map from ``--backend`` names to their :class:`~mmspubench.eval.backends.plugin.Backend`.

Light: the declarations import no engine; each loader imports its engine when it runs. An option
name is declared once: a backend's may not be another backend's, nor the run config's
(:data:`RESERVED`, which :mod:`mmspubench.eval.config` fills when it is imported, checking the
backends registered before it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from mmspubench.eval.backends import openai, vllm
from mmspubench.eval.backends.plugin import Backend
from mmspubench.eval.backends.transformers import BACKEND as TRANSFORMERS
from mmspubench.registry import Registry

RESERVED: set[str] = set()
"""The run config's option names (``RunConfig``'s fields), which no backend may declare."""


def _check(registered: Mapping[str, Backend], backend: Backend) -> None:
    """Its option names may not be another backend's or the run config's (a backend of the same
    name is replaced)."""
    taken = set(RESERVED)
    for other in registered.values():
        if other.name != backend.name:
            taken |= {f.name for f in dataclasses.fields(other.options)}
    clash = sorted(taken & {f.name for f in dataclasses.fields(backend.options)})
    if clash:
        raise ValueError(f"backend {backend.name!r}: option(s) {', '.join(clash)} already declared")


REGISTRY: Registry[Backend] = Registry("--backend", _check)
"""Registered backends by name, in flag order (the first is the default)."""


def register(backend: Backend) -> None:
    """Add ``backend``; its option names may not be another backend's or the run config's."""
    REGISTRY.register(backend)


def reserve(names: Iterable[str]) -> None:
    """Declare the run config's option names; a registered backend that declares one is refused."""
    RESERVED.update(names)
    for backend in REGISTRY.values():
        _check(REGISTRY, backend)


def names() -> tuple[str, ...]:
    """The registered backends' names (the ``--backend`` choices)."""
    return REGISTRY.names()


def get_backend(name: str) -> Backend:
    """The backend called ``name``; one line naming the choices if there is none."""
    return REGISTRY.lookup(name)


def owner_of(option_name: str) -> Backend | None:
    """The backend that declares the option ``option_name`` (``None``: no backend does)."""
    for backend in REGISTRY.values():
        if any(f.name == option_name for f in dataclasses.fields(backend.options)):
            return backend
    return None


for _backend in (TRANSFORMERS, vllm.BACKEND, openai.BACKEND):
    register(_backend)
