"""Engines behind the model Protocol: transformers (default), vLLM offline, OpenAI-compatible servers.

Each backend is a plug-in (:mod:`~mmspubench.eval.backends.plugin`): it declares its name, its own
``Options``, its default batch size, its checks and its loader, and
:mod:`~mmspubench.eval.backends.registry` maps names to them. Each builds a
:class:`~mmspubench.eval.protocol.VisionLanguageModel`; the runner, the result files and resume are
the same for all of them. :func:`describe` is what results.json records under ``backend`` (name,
version, settings, and the API's token usage).
"""

from __future__ import annotations

from typing import Any

__all__ = ["describe"]


def describe(model: Any) -> dict[str, Any]:
    """results.json's ``backend``: ``model.backend_info`` when the model has it, else the transformers
    adapter's (name, transformers version, scorer, batch size, device)."""
    info = getattr(model, "backend_info", None)
    if info is not None:
        return dict(info)
    try:
        import transformers

        version = transformers.__version__
    except ImportError:  # a fake model in a test environment without transformers
        version = None
    inner = getattr(model, "model", None)
    settings = {
        "scorer": getattr(model, "scorer", None),
        "batch_size": getattr(model, "batch_size", None),
        "device": str(getattr(inner, "device", "")) or None,
    }
    return {"name": "transformers", "version": version, "settings": settings}
