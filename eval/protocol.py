"""The small interface every model adapter implements, and the requests it answers.

The runner, the metrics and the Space speak only to this Protocol; the transformers adapter
(``mmspubench.eval.backends.transformers.adapter``) and the fake models of the tests implement it.

Optional, for the blind view's text-only prompts (``--metrics ...,blind``, ``--blind-image none``):
a model whose ``text_only`` attribute is true also has ``render_text(prompt) -> str`` (the chat
without the image) and accepts ``None`` for an image in ``generate`` and in a ``ScoreRequest``.
Without it the run asks for ``--blind-image grey``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PIL.Image import Image


@dataclass(frozen=True, slots=True)
class ChatPrompt:
    """A prompt g(t) before the chat template: system text, one user turn, assistant prefix."""

    system: str
    """System message text (may be empty: then no system turn is sent)."""
    user_text: str
    """Text of the user turn; the image comes first in the turn, this text after it."""
    assistant_prefix: str
    """Text the assistant turn starts with, appended after the template's generation prompt."""


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    """Score ``continuation`` after ``context`` (already chat-templated) given ``image``."""

    image: Image
    """The item's image."""
    context: str
    """Exact prompt text given to the processor with the image (chat template applied)."""
    continuation: str
    """Exact text whose tokens are scored."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What results.json records about the model."""

    id: str
    """Hub id or local path as given by the user."""
    path: str
    """Resolved local folder the weights were read from."""
    revision: str | None
    """Hub commit hash when known, else ``None``."""
    dtype: str
    """Torch dtype the model ran in, e.g. ``float32``."""
    adapter: str
    """Adapter name and family hooks, e.g. ``hf-image-text-to-text/llava``."""
    scorer_used: str | None = None
    """Continuation scorer that ran: ``fast`` or ``plain``; ``None`` for a model without that choice."""
    scorer_fallback_reason: str | None = None
    """Why ``fast`` was asked for and ``plain`` ran; ``None`` when no fallback happened."""


@runtime_checkable
class VisionLanguageModel(Protocol):
    """A model that renders prompts, answers them, and scores continuations."""

    @property
    def info(self) -> ModelInfo:
        """Identity of the model for the result files."""
        ...

    def render(self, prompt: ChatPrompt) -> str:
        """The exact text given to the processor with the image: chat template + assistant prefix."""
        ...

    def generate(self, images: Sequence[Image], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        """Greedy answers, one per (image, rendered context) pair, without the context."""
        ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """Sum of float32 log-probabilities of each request's continuation tokens."""
        ...
