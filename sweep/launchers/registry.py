"""The launchers by ``--launcher`` name: one line per launcher module."""

from __future__ import annotations

from mmspubench.errors import MMSpuBenchError
from mmspubench.sweep.launchers import hf_jobs, local, slurm
from mmspubench.sweep.launchers.plugin import Launcher

REGISTRY: dict[str, Launcher] = {}


def register(launcher: Launcher) -> None:
    """Add a launcher (its name must be new)."""
    if launcher.name in REGISTRY:
        raise ValueError(f"a launcher named {launcher.name!r} is registered already")
    REGISTRY[launcher.name] = launcher


register(local.LAUNCHER)
register(slurm.LAUNCHER)
register(hf_jobs.LAUNCHER)


def names() -> tuple[str, ...]:
    """The registered launchers' names."""
    return tuple(REGISTRY)


def get_launcher(name: str) -> Launcher:
    """The launcher called ``name`` (one line if none is)."""
    if name not in REGISTRY:
        raise MMSpuBenchError(f"--launcher {name!r}: unknown; expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def sections() -> tuple[str, ...]:
    """The SWEEP.yaml keys of the launchers' settings."""
    return tuple(one.section for one in REGISTRY.values() if one.section is not None)
