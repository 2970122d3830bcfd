"""The one map from ``--metrics`` names to their :class:`~mmspubench.eval.views.plugin.View`.

Registry order is the order everything happens in: the names in ``--metrics`` help, the asks of a
chunk (after the published ones), the keys of a sample line and the sections of results.json.
Light: the declarations import no model engine and no plotting library.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from mmspubench.eval.records import BUILTIN_PARTS, SampleResult
from mmspubench.eval.views import accuracy, blind, calibration, cgla, circular, interventions
from mmspubench.eval.views.plugin import View
from mmspubench.registry import Registry

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

VIEWS: Registry[View] = Registry("--metrics")
"""Registered views by ``--metrics`` name, in registry order."""
RESERVED_KEYS = (
    *(f.name for f in dataclasses.fields(SampleResult) if f.name not in (*BUILTIN_PARTS, "views")),
    "run",
)
"""Keys of a sample line that belong to the record itself (a view's part may not take them)."""
RESULTS_KEYS = (
    "schema_version",
    "benchmark",
    "dataset",
    "model",
    "config",
    "timing",
    "backend",
    "environment",
    "accuracy_only",
    "created_at",
    "package_version",
    "harness",
    "replies",
)
"""Keys of results.json outside the views' sections (``harness``: a run ingested from another
harness, ``mmspubench.integrations.ingest``)."""
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
"""What a view's name and its sample key look like: a lowercase identifier. A ``--metrics`` list is
split at commas and compare's ``--a-view``/``--b-view`` at colons, so neither may hold one."""


def register(view: View) -> None:
    """Add ``view`` after the registered ones; its name and its sample key must be new. Register
    before any run config is read: ``--metrics`` takes the names registered then. A name or key
    that is not a lowercase identifier (``[a-z][a-z0-9_]*``) is refused."""
    _check_identifier(view.name, "name", f"view {view.name!r}")
    if view.name in VIEWS or view.name in RESULTS_KEYS:
        raise ValueError(f"view {view.name!r}: the name is taken")
    if view.part is not None:
        _check_identifier(view.part.key, "sample key", f"view {view.name!r}: sample key {view.part.key!r}")
        taken = set(RESERVED_KEYS) | {v.part.key for v in VIEWS.values() if v.part is not None}
        if view.part.key in taken:
            raise ValueError(f"view {view.name!r}: sample key {view.part.key!r} is taken")
    VIEWS[view.name] = view


def _check_identifier(value: object, what: str, where: str) -> None:
    """Refuse a name or key other than a lowercase identifier, saying what was given."""
    if not isinstance(value, str):
        raise TypeError(f"{where}: the {what} must be a str, not {type(value).__name__}")
    if NAME_PATTERN.fullmatch(value) is None:
        raise ValueError(
            f"{where}: the {what} must be a lowercase identifier (a letter a-z, then letters a-z, "
            "digits or underscores)"
        )


def names() -> tuple[str, ...]:
    """The registered views' names (the ``--metrics`` choices), in registry order."""
    return tuple(VIEWS)


def paper() -> tuple[str, ...]:
    """The paper's two views' names (``View.paper``), in registry order: a run's default metrics."""
    return tuple(name for name, view in VIEWS.items() if view.paper)


def get_view(name: str) -> View:
    """The view called ``name``; one line naming the choices if there is none."""
    return VIEWS.lookup(name)


def in_run(config: RunConfig) -> list[View]:
    """The views the run computes, in registry order."""
    return [view for name, view in VIEWS.items() if name in config.metrics]


for _view in (accuracy.VIEW, cgla.VIEW, circular.VIEW, blind.VIEW, calibration.VIEW, interventions.VIEW):
    register(_view)
