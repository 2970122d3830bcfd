"""The Inspect AI model provider ``mmspubench/<model>``: a local or Hub VLM through our transformers loader.

``--model mmspubench/bundled`` runs the bundled tiny model; ``--model mmspubench/<folder or Hub
id>`` any other (``-M device=cuda -M dtype=bfloat16 -M trust_remote_code=true``). The model is
loaded by ``mmspubench.load_model`` and each request is answered as ``mmspubench eval
--answer-mode generate`` answers an item: the system text, the image and the user text become our
``ChatPrompt``, rendered with the model's chat template, and the answer is greedy. The weights
load on the first request (so the task's option check comes first), once per process.

A thinking model's reply is split by its family's markers as eval splits it
(``mmspubench.eval.replies.reasoning``, the model's ``reasoning_style``): the reasoning goes to
Inspect as a ``ContentReasoning`` part of the assistant message and the text after it is the
message's text (``ModelOutput.completion``); a reply cut inside its reasoning has an empty text
and ``stop_reason: max_tokens``. A reply without reasoning is the message's text, as before. The
usage is the engine's own count (prompt, output and reasoning tokens), else the output's tokens
by the model's tokenizer.
"""

from __future__ import annotations

import base64
import io
import threading
from dataclasses import dataclass
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    ContentImage,
    ContentReasoning,
    ContentText,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.protocol import ChatPrompt, Generation, as_generation
from mmspubench.eval.replies.reasoning import after_reasoning, split_reply, style_after_prompt

BUNDLED = "bundled"
"""Model name that stands for the bundled tiny model."""
DEFAULT_MAX_TOKENS = 16
"""Answer length when the request sets none (``mmspubench eval``'s ``--max-new-tokens`` default)."""


@dataclass(frozen=True, slots=True)
class LoadKey:
    """What a loaded model is: its folder or Hub id and how it was loaded."""

    folder: str
    """Local folder or Hub id (the bundled model's folder for ``bundled``)."""
    device: str
    """Torch device."""
    dtype: str
    """Torch dtype name."""
    trust_remote_code: bool
    """Whether the model's own code may run."""


_LOADED: dict[LoadKey, Any] = {}
_LOCK = threading.Lock()


def loaded_model(key: LoadKey) -> Any:
    """``mmspubench.load_model`` of ``key``, loaded once per process."""
    with _LOCK:
        if key not in _LOADED:
            import mmspubench

            _LOADED[key] = mmspubench.load_model(
                key.folder,
                device=key.device,
                dtype=key.dtype,
                batch_size=1,
                trust_remote_code=key.trust_remote_code,
            )
        return _LOADED[key]


def _decode_image(uri: str) -> Any:
    from PIL import Image

    head, sep, body = uri.partition(",")
    if not (uri.startswith("data:image/") and sep and head.endswith(";base64")):
        raise MMSpuBenchError("mmspubench provider: an image must be a base64 data: URI")
    return Image.open(io.BytesIO(base64.b64decode(body))).convert("RGB")


def to_prompt(messages: list[ChatMessage]) -> tuple[ChatPrompt, Any]:
    """Inspect messages -> our ``ChatPrompt`` and its image (a system turn, one user turn with at
    most one image; ``None`` without one: the blind view's text-only prompt)."""
    system = " ".join(m.text for m in messages if isinstance(m, ChatMessageSystem))
    users = [m for m in messages if isinstance(m, ChatMessageUser)]
    if len(users) != 1 or len(messages) != len(users) + sum(
        isinstance(m, ChatMessageSystem) for m in messages
    ):
        raise MMSpuBenchError("mmspubench provider: expected system messages and exactly one user message")
    content = users[0].content
    parts = [ContentText(text=content)] if isinstance(content, str) else list(content)
    images = [p.image for p in parts if isinstance(p, ContentImage)]
    if len(images) > 1:
        raise MMSpuBenchError(
            f"mmspubench provider: expected at most one image in the user turn, got {len(images)}"
        )
    text = "".join(p.text for p in parts if isinstance(p, ContentText))
    image = _decode_image(images[0]) if images else None
    return ChatPrompt(system=system, user_text=text, assistant_prefix=""), image


class MMSpuBenchModelAPI(ModelAPI):
    """Inspect's view of one of our loaded models (one request at a time, greedy)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        from mmspubench.eval.extras import require

        require("the mmspubench/<model> Inspect provider", ["torch", "transformers"])
        folder: str = model_name
        if model_name == BUNDLED:
            from mmspubench.eval.bundled import bundled_model_dir

            folder = str(bundled_model_dir())
        self.key = LoadKey(
            folder=folder,
            device=str(model_args.get("device", "cpu")),
            dtype=str(model_args.get("dtype", "float32")),
            trust_remote_code=str(model_args.get("trust_remote_code", "false")).lower() == "true",
        )

    @property
    def vlm(self) -> Any:
        """The loaded model: loaded on the first request (after the task checked its options), once
        per process for every instance Inspect makes of the same model."""
        return loaded_model(self.key)

    def max_connections(self) -> int:
        """One model in this process: requests run one by one."""
        return 1

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """The greedy answer to the request, as ``mmspubench eval`` generates it (a request without
        an image through the model's text-only chat, as the blind view of ``mmspubench eval``)."""
        prompt, image = to_prompt(input)
        if image is None and not getattr(self.vlm, "text_only", False):
            raise MMSpuBenchError(
                f"mmspubench provider: model {self.model_name!r} has no text-only prompt path; "
                "use -T blind_image=grey"
            )
        context = self.vlm.render(prompt) if image is not None else self.vlm.render_text(prompt)
        max_tokens = config.max_tokens or DEFAULT_MAX_TOKENS
        reply = as_generation(self.vlm.generate([image], [context], max_tokens)[0])
        output = reply_output(self.model_name, reply, _style(self.vlm, context))
        output.usage = self._usage(reply)
        return output

    def _usage(self, reply: Generation) -> ModelUsage:
        """The engine's counts; without them, the reply's tokens by the model's tokenizer."""
        if reply.completion_tokens is None:
            tokenizer = getattr(getattr(self.vlm, "processor", None), "tokenizer", None)
            tokens = len(tokenizer(reply.text)["input_ids"]) if tokenizer is not None else 0
            return ModelUsage(input_tokens=0, output_tokens=tokens, total_tokens=tokens)
        prompt = reply.prompt_tokens or 0
        return ModelUsage(
            input_tokens=prompt,
            output_tokens=reply.completion_tokens,
            total_tokens=prompt + reply.completion_tokens,
            reasoning_tokens=reply.reasoning_tokens,
        )


def _style(vlm: Any, context: str) -> str:
    """The model's reasoning style for the reply to ``context`` (eval's: ``asking.reasoning_style``)."""
    from mmspubench.eval.asking import reasoning_style

    return style_after_prompt(reasoning_style(vlm), context)


def reply_output(model: str, reply: Generation, style: str) -> ModelOutput:
    """Inspect's output of ``reply`` (module doc): its reasoning, split by ``style``, as a
    ``ContentReasoning`` part and the text after it as the message's text."""
    split = split_reply(reply, style)
    if split.reasoning is None:
        return ModelOutput.from_content(model=model, content=reply.text)
    after = "" if split.truncated else after_reasoning(reply.text, style).strip()
    content: list[Any] = [ContentReasoning(reasoning=split.reasoning), ContentText(text=after)]
    cut = split.truncated or reply.finish_reason == "length"
    return ModelOutput.from_content(model=model, content=content, stop_reason="max_tokens" if cut else "stop")
