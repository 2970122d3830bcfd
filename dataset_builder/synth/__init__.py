"""The synthetic twin of MM-SpuBench: generate (items, release), draw (+ shapes, exact: the
version-independent arithmetic), vocab (classes, values, questions), confounds, counterfactuals,
and cli (the ``synth`` subcommand).

The generator's names load on first use, so the subcommand's registration stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmspubench.dataset_builder.synth.generate import (
        SynthConfig,
        SynthItem,
        generate_items,
        make_item,
        write_release,
    )
    from mmspubench.dataset_builder.synth.vocab import CLASSES

_WHERE = {
    "CLASSES": "vocab",
    "SynthConfig": "generate",
    "SynthItem": "generate",
    "generate_items": "generate",
    "make_item": "generate",
    "write_release": "generate",
}
"""Re-exported name -> its module in this package."""

__all__ = ["CLASSES", "SynthConfig", "SynthItem", "generate_items", "make_item", "write_release"]


def __getattr__(name: str) -> Any:
    """Import a re-exported name from its module on first use (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
