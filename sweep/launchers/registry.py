"""The launchers by ``--launcher`` name: one line per launcher module."""

from __future__ import annotations

from collections.abc import Mapping

from mmspubench.registry import Registry
from mmspubench.sweep.launchers import hf_jobs, local, slurm
from mmspubench.sweep.launchers.plugin import Launcher


def _check(registered: Mapping[str, Launcher], launcher: Launcher) -> None:
    """Its name must be new."""
    if launcher.name in registered:
        raise ValueError(f"a launcher named {launcher.name!r} is registered already")


REGISTRY: Registry[Launcher] = Registry("--launcher", _check)
"""Registered launchers by name, in registration order."""


def register(launcher: Launcher) -> None:
    """Add a launcher (its name must be new)."""
    REGISTRY.register(launcher)


register(local.LAUNCHER)
register(slurm.LAUNCHER)
register(hf_jobs.LAUNCHER)


def names() -> tuple[str, ...]:
    """The registered launchers' names."""
    return REGISTRY.names()


def get_launcher(name: str) -> Launcher:
    """The launcher called ``name`` (one line if none is)."""
    return REGISTRY.lookup(name)


def sections() -> tuple[str, ...]:
    """The SWEEP.yaml keys of the launchers' settings."""
    return tuple(one.section for one in REGISTRY.values() if one.section is not None)
