"""MM-SpuBench: build the benchmark, evaluate vision-language models on it, run its Space.

The public Python API, gathered in one place. Names load on first use, so ``import mmspubench``
stays light (no torch, no transformers) and ``mmspubench build`` runs without the eval extras::

    import mmspubench
    results = mmspubench.evaluate(limit=4, out=None)   # the bundled model on the bundled release
    print(results["accuracy"]["overall"], results["cgla"]["acc"])

Parts: ``mmspubench.dataset_builder`` (raw release -> Hub dataset; synthetic release),
``mmspubench.eval`` (adapters, scoring, metrics, result files), ``mmspubench.space`` (Gradio app),
``mmspubench.curate`` (the curation pipeline: select, annotate, review, export).
Dependency direction: dataset_builder <- eval <- space <- curate; ``mmspubench.cli`` sits on top of all.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmspubench.dataset_builder.builder import build_repo, validate_release
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.dataset_builder.schema import FEATURES, TYPE_ABBREV, TYPE_NAMES, Item
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.eval.analysis.report import load_for_report, markdown_table
    from mmspubench.eval.api import evaluate
    from mmspubench.eval.backends.transformers.loading import load_model
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import SampleResult
    from mmspubench.eval.results import read_results, read_samples

try:
    __version__ = version("mm-spubench")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

_WHERE: dict[str, str] = {
    "FEATURES": "mmspubench.dataset_builder.schema",
    "TYPE_ABBREV": "mmspubench.dataset_builder.schema",
    "TYPE_NAMES": "mmspubench.dataset_builder.schema",
    "Item": "mmspubench.dataset_builder.schema",
    "MMSpuBenchError": "mmspubench.errors",
    "RunConfig": "mmspubench.eval.config",
    "SampleResult": "mmspubench.eval.records",
    "build_repo": "mmspubench.dataset_builder.builder",
    "evaluate": "mmspubench.eval.api",
    "generate_items": "mmspubench.dataset_builder.synth.generate",
    "load_benchmark": "mmspubench.dataset_builder.load",
    "load_for_report": "mmspubench.eval.analysis.report",
    "load_model": "mmspubench.eval.backends.transformers.loading",
    "markdown_table": "mmspubench.eval.analysis.report",
    "read_results": "mmspubench.eval.results",
    "read_samples": "mmspubench.eval.results",
    "validate_release": "mmspubench.dataset_builder.builder",
    "write_release": "mmspubench.dataset_builder.synth.generate",
}

__all__ = [
    "FEATURES",
    "TYPE_ABBREV",
    "TYPE_NAMES",
    "Item",
    "MMSpuBenchError",
    "RunConfig",
    "SampleResult",
    "__version__",
    "build_repo",
    "evaluate",
    "generate_items",
    "load_benchmark",
    "load_for_report",
    "load_model",
    "markdown_table",
    "read_results",
    "read_samples",
    "validate_release",
    "write_release",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'mmspubench' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
