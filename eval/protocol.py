"""The small interface every model adapter implements, and the requests it answers.

The runner, the metrics and the Space speak only to this Protocol; the transformers adapter
(``mmspubench.eval.backends.transformers.adapter``) and the fake models of the tests implement it.

Optional, for the blind view's text-only prompts (``--metrics ...,blind``, ``--blind-image none``):
a model whose ``text_only`` attribute is true also has ``render_text(prompt) -> str`` (the chat
without the image) and accepts ``None`` for an image in ``generate`` and in a ``ScoreRequest``.
Without it the run asks for ``--blind-image grey``.

Optional, for a model that reasons before it answers: a ``reasoning_style`` attribute naming how
its replies mark the reasoning (one of :data:`mmspubench.eval.replies.reasoning.STYLES`, from
``style_for(family, chat_template)``); a model without it is read as ``none`` (plug-in backends,
test fakes). Its ``generate`` then returns each reply whole, reasoning markers included
(:class:`Generation`).

Optional, for an engine with a fast scoring path (:mod:`mmspubench.eval.scorer_check`): a
``fast_path`` attribute naming the path that runs (``None`` when none does), a
``reference_score(requests)`` method that computes the same scores the plain way, and a
``scorer_tally`` (:class:`ScorerTally`) counting the requests each scorer scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
    scored: bool = False
    """A prompt whose continuation is scored (CGL, ``logprob`` answers), not answered: a model that
    can switch thinking renders it with thinking off (:mod:`~mmspubench.eval.checkpoint.thinking`)."""


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
class Generation:
    """One generated reply as the engine returned it."""

    text: str
    """The whole generated text; reasoning markers kept even when they are special tokens."""
    reasoning: str | None = None
    """Reasoning the server returned apart (``reasoning_content``); ``None`` when none."""
    finish_reason: str | None = None
    """``stop``, ``length`` (cut by the token budget) or ``None`` (unknown)."""
    prompt_tokens: int | None = None
    """Tokens of the prompt; ``None`` when unknown."""
    completion_tokens: int | None = None
    """All generated tokens, reasoning included; ``None`` when unknown."""
    reasoning_tokens: int | None = None
    """Of the generated tokens, those of the reasoning; ``None`` when unknown."""
    seconds: float | None = None
    """Wall time of its request (a server), or of its batch divided evenly among the batch's
    replies (a local engine); ``None`` when the engine did not time it (nothing is recorded)."""


def as_generation(reply: str | Generation) -> Generation:
    """``reply`` as a :class:`Generation`: a plain string (plug-in backends, test fakes) is its text."""
    return reply if isinstance(reply, Generation) else Generation(text=reply)


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

    def generate(
        self, images: Sequence[Image], contexts: Sequence[str], max_new_tokens: int
    ) -> Sequence[str | Generation]:
        """Greedy answers, one per (image, rendered context) pair, without the context: a
        :class:`Generation`, or a plain string meaning ``Generation(text=s)``."""
        ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        """Sum of float32 log-probabilities of each request's continuation tokens."""
        ...


@dataclass(frozen=True, slots=True)
class FastPath:
    """A fast way an engine computes scores, which the runner checks against the plain way."""

    name: str
    """What it is called in messages, e.g. ``the fast scorer``."""
    remedy: str
    """The option that turns it off, e.g. ``--scorer plain``."""


@dataclass(slots=True)
class ScorerTally:
    """Requests scored by each scorer, and why any were scored plain (mutable on purpose: a running
    count that the runner reads before and after each chunk)."""

    requests: dict[str, int] = field(default_factory=dict)
    """Requests scored, by scorer (``fast``, ``plain``)."""
    reasons: dict[str, int] = field(default_factory=dict)
    """Requests scored plain although ``fast`` was asked for, by reason."""

    def add(self, scorer: str, count: int, reason: str | None = None) -> None:
        """Count ``count`` requests scored by ``scorer`` (``reason``: why not by the fast one)."""
        if count <= 0:
            return
        self.requests[scorer] = self.requests.get(scorer, 0) + count
        if reason is not None:
            self.reasons[reason] = self.reasons.get(reason, 0) + count

    def copy(self) -> ScorerTally:
        """A snapshot (to take the difference of a chunk with :meth:`since`)."""
        return ScorerTally(dict(self.requests), dict(self.reasons))

    def since(self, before: ScorerTally) -> ScorerTally:
        """What was counted after the snapshot ``before``."""
        return ScorerTally(
            {
                k: v - before.requests.get(k, 0)
                for k, v in self.requests.items()
                if v > before.requests.get(k, 0)
            },
            {
                k: v - before.reasons.get(k, 0)
                for k, v in self.reasons.items()
                if v > before.reasons.get(k, 0)
            },
        )
