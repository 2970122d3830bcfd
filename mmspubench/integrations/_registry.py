"""What the ``inspect_ai`` entry point loads: the task and the model provider, registered."""

from __future__ import annotations

from inspect_ai.model import ModelAPI, modelapi
from mmspubench.integrations.inspect_task import mm_spubench

__all__ = ["mm_spubench", "mmspubench_provider"]


@modelapi(name="mmspubench")
def mmspubench_provider() -> type[ModelAPI]:
    """The ``mmspubench/<model>`` provider (torch and transformers load on first use)."""
    from mmspubench.integrations.inspect_provider import MMSpuBenchModelAPI

    return MMSpuBenchModelAPI
