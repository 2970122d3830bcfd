"""What the ``inspect_ai`` entry point loads: the task and the model providers, registered."""

from __future__ import annotations

from inspect_ai.model import ModelAPI, modelapi
from mmspubench.integrations.inspect.task import mm_spubench

__all__ = ["mm_spubench", "mmspubench_mock_provider", "mmspubench_provider"]


@modelapi(name="mmspubench")
def mmspubench_provider() -> type[ModelAPI]:
    """The ``mmspubench/<model>`` provider (torch and transformers load on first use)."""
    from mmspubench.integrations.inspect.provider import MMSpuBenchModelAPI

    return MMSpuBenchModelAPI


@modelapi(name="mmspubench-mock")
def mmspubench_mock_provider() -> type[ModelAPI]:
    """The ``mmspubench-mock/<reply>`` provider: ``<reply>`` to every request, offline."""
    from mmspubench.integrations.inspect.mock import MockModelAPI

    return MockModelAPI
