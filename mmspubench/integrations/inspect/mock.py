"""The Inspect AI model provider ``mmspubench-mock/<reply>``: answers ``<reply>`` to every request, offline.

A smoke test of the task and of ``mmspubench ingest`` with nothing to download and no weights:
``inspect eval mmspubench/mm_spubench --model mmspubench-mock/A -T limit=4``. Inspect's own
``mockllm/model`` counts its tokens with a tokenizer it downloads on first use (tiktoken's
``o200k_base``), so it fails on a machine without network; this provider reports its token
usage itself (one token per word of the reply), so Inspect never asks for a tokenizer.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage
from inspect_ai.tool import ToolChoice, ToolInfo

PROVIDER = "mmspubench-mock"
"""The provider's registry name: ``--model mmspubench-mock/<reply>``."""


def mock_output(model: str, reply: str) -> ModelOutput:
    """A reply with its token usage filled in (one token per word, at least one)."""
    output = ModelOutput.from_content(model=model, content=reply)
    tokens = max(1, len(reply.split()))
    output.usage = ModelUsage(input_tokens=0, output_tokens=tokens, total_tokens=tokens)
    return output


class MockModelAPI(ModelAPI):
    """A model that answers its own name's reply part to everything."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.reply = model_name

    def max_connections(self) -> int:
        """Nothing to wait for: answer requests as they come."""
        return 32

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """The reply."""
        return mock_output(self.model_name, self.reply)
