"""A deterministic fake model implementing the Protocol, a hand-made dataset, and a run script.

Run as a script (``python tests/eval/fakes.py OUT N [DELAY]``, repo root on ``PYTHONPATH``) it
evaluates the fake model on the hand-made dataset into OUT, so tests can kill it or launch it
under ``torchrun``.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
from mmspubench.dataset_builder.schema import FEATURES, TYPE_NAMES
from mmspubench.eval.protocol import ChatPrompt, ModelInfo, ScoreRequest
from PIL import Image

SCRIPTED = ["A", "(B)", "C.", "Answer: D", "no idea", "B", "a blue bus"]


def _digest(*parts: str | bytes) -> int:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode("utf-8"))
        h.update(b"\0")
    return int.from_bytes(h.digest()[:8], "big")


class FakeModel:
    """Scores are a hash of (image, context, continuation); answers are scripted by a hash too."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.score_calls: list[int] = []
        self.generate_calls: list[int] = []

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(id="fake", path="/fake", revision=None, dtype="float32", adapter="fake")

    def render(self, prompt: ChatPrompt) -> str:
        return f"<s>{prompt.system}</s><u><image>{prompt.user_text}</u><a>{prompt.assistant_prefix}"

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        self.generate_calls.append(len(contexts))
        return [
            SCRIPTED[_digest(img.tobytes(), ctx) % len(SCRIPTED)]
            for img, ctx in zip(images, contexts, strict=True)
        ]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        self.score_calls.append(len(requests))
        if self.delay:
            time.sleep(self.delay)
        return [-(_digest(r.image.tobytes(), r.context, r.continuation) % 10_000) / 1000.0 for r in requests]


def make_rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        t1 = TYPE_NAMES[i % len(TYPE_NAMES)]
        types = [t1] if i % 3 else [t1, TYPE_NAMES[(i + 4) % len(TYPE_NAMES)]]
        rows.append(
            {
                "id": f"{i:06d}",
                "image": Image.new("RGB", (16, 16), ((37 * i) % 256, (91 * i) % 256, (53 * i) % 256)),
                "question": f"Which object is shown in picture {i}?",
                "options": ["a red car", "a blue bus", "a green bike", "a yellow taxi"],
                "answer": i % 4,
                "class_name": ["car", "bus", "bike", "taxi"][i % 4],
                "core_attributes": [f"core {i}-{k}" for k in range(1 + i % 3)],
                "spurious_attributes": [f"spurious {i}-{k}" for k in range(1 + (i + 1) % 4)],
                "spurious_types": [TYPE_NAMES.index(t) for t in types],
                "source": 5,
            }
        )
    return rows


def make_dataset(n: int) -> datasets.Dataset:
    return datasets.Dataset.from_list(make_rows(n), features=FEATURES)


DATASET_INFO = {"id": "hand-made", "path": None, "revision": "fixture-v1"}


def run_fake(out: Path, n: int, delay: float = 0.0, **options: Any) -> dict[str, Any] | None:
    from mmspubench.eval import distributed

    from tests.helpers.run_folders import eval_run, fake_config

    shard = distributed.current_shard()
    try:
        config = fake_config(batch_size=3, **options)
        return eval_run(out, lambda: FakeModel(delay), n=n, config=config, shard=shard)
    finally:
        distributed.finish(shard)


if __name__ == "__main__":
    run_fake(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)
