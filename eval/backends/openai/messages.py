"""The chat messages ``--backend openai`` sends: a prompt rendered as JSON messages (the image as
a placeholder part, none for a text-only prompt), the image as a data URL, and the cache-wave
group of a scoring request (:mod:`~mmspubench.eval.backends.openai.client`)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.eval.protocol import ChatPrompt, ScoreRequest

if TYPE_CHECKING:
    from PIL.Image import Image


def render_messages(prompt: ChatPrompt, image: bool = True) -> str:
    """The chat messages of a prompt as JSON (image as ``{"type": "image"}``), the backend's context;
    ``image=False``: the user content is the text part alone (a text-only prompt)."""
    messages: list[dict[str, Any]] = []
    if prompt.system:
        messages.append({"role": "system", "content": prompt.system})
    text = {"type": "text", "text": prompt.user_text}
    messages.append({"role": "user", "content": [{"type": "image"}, text] if image else [text]})
    if prompt.assistant_prefix:
        messages.append({"role": "assistant", "content": prompt.assistant_prefix})
    return json.dumps(messages, ensure_ascii=False)


def with_image(context: str, image_url: str | None, continuation: str = "") -> list[dict[str, Any]]:
    """The messages of ``context`` with its image part as ``image_url`` (``None``: a text-only
    context, which must have no image part) and ``continuation`` appended to the assistant turn."""
    messages: list[dict[str, Any]] = json.loads(context)
    for message in messages:
        if isinstance(message["content"], list):
            if image_url is None and any(part["type"] == "image" for part in message["content"]):
                raise ValueError("a context with an image part was given no image")
            message["content"] = [
                {"type": "image_url", "image_url": {"url": image_url}} if part["type"] == "image" else part
                for part in message["content"]
            ]
    if continuation:
        if messages[-1]["role"] != "assistant":
            messages.append({"role": "assistant", "content": ""})
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + continuation}
    return messages


def data_url(image: Image) -> str:
    """The image as a base64 PNG data URL."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


class ImageUrls:
    """The data URLs of one call's images, keyed by content
    (:class:`~mmspubench.eval.checkpoint.encoding.ImageKeys`): each distinct picture is encoded once
    (an item's letters and conditions share it), and an intervened image, even one pixel away from
    the published one, gets its own URL, tokenization and cache wave."""

    def __init__(self, images: Sequence[Image | None]) -> None:
        from mmspubench.eval.checkpoint.encoding import ImageKeys

        self._keys = ImageKeys()
        self._urls: dict[str, str] = {}
        for image in images:
            if image is not None and self._keys.key(image) not in self._urls:
                self._urls[self._keys.key(image)] = data_url(image)

    def key(self, image: Image | None) -> str | None:
        """The content key of ``image`` (``None`` for a text-only prompt)."""
        return None if image is None else self._keys.key(image)

    def url(self, image: Image | None) -> str | None:
        """The data URL of ``image``; ``None`` for a text-only prompt."""
        return None if image is None else self._urls[self._keys.key(image)]

    def wave_key(self, request: ScoreRequest) -> tuple[str, str]:
        """The cache-wave group of a scoring request: its image's content, or for a text-only
        request its context (the letters of one blind question), never the shared ``None``."""
        if request.image is None:
            return "text", request.context
        return "image", self._keys.key(request.image)
