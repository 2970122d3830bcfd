"""A model whose scores are set by hand, so live-run figures can be computed on paper."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmspubench.eval.protocol import ChatPrompt, ModelInfo, ScoreRequest


class TableModel:
    """Letter continuations score ``letters[letter]``; a CGLA context scores ``attributes[text]`` if it holds it."""

    def __init__(
        self, letters: Mapping[str, float], attributes: Mapping[str, float], default: float = -9.0
    ) -> None:
        self.letters = dict(letters)
        self.attributes = dict(attributes)
        self.default = default
        self.calls = 0

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(id="table", path="/table", revision=None, dtype="float32", adapter="table")

    def render(self, prompt: ChatPrompt) -> str:
        return f"<s>{prompt.system}</s><u><image>{prompt.user_text}</u><a>{prompt.assistant_prefix}"

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        return ["A" for _ in contexts]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        self.calls += 1
        out = []
        for request in requests:
            letter = request.continuation.strip()
            if letter in self.letters and request.context.endswith("Answer:"):
                out.append(self.letters[letter])
                continue
            hits = [
                v
                for k, v in self.attributes.items()
                if request.context.split("attribute of the object: ")[-1].startswith(k)
            ]
            out.append(hits[0] if hits else self.default)
        return out
