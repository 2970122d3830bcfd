"""Live runs: load a small model on demand and score one item (from the dataset or typed in).

Inputs from visitors are bounded here, before any model sees them: uploads by size, format and
pixel count, texts by length, attribute lists by count. Every refusal is an ``MMSpuBenchError``
whose message the page shows as is.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from mmspubench.dataset_builder.schema import (
    ANSWER_LETTERS,
    MAX_ATTRIBUTES,
    MIN_ATTRIBUTES,
    NUM_OPTIONS,
    TYPE_NAMES,
    Item,
)
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.markup import escape_cell
from mmspubench.space.upload_sniff import check_upload, shown_name

if TYPE_CHECKING:
    from mmspubench.eval.protocol import VisionLanguageModel
    from PIL.Image import Image

BUNDLED_CHOICE = "bundled small model (offline)"
"""Model choice that runs the bundled model, built offline on first use."""
DEFAULT_HUB_MODELS: tuple[str, ...] = (
    "HuggingFaceTB/SmolVLM-256M-Instruct",
    "HuggingFaceTB/SmolVLM-500M-Instruct",
)
"""Small Hub models offered when ``MMSPUBENCH_SPACE_MODELS`` does not name others (need the Hub)."""
UPLOAD_FORMATS: tuple[str, ...] = ("PNG", "JPEG", "WEBP", "MPO")
"""Image formats accepted from visitors."""
UPLOAD_EXTENSIONS: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".webp")
MAX_UPLOAD_BYTES = 5 * 1024 * 1024
"""Largest accepted upload file."""
MAX_UPLOAD_PIXELS = 4096 * 4096
"""Largest accepted width x height (decompression-bomb guard)."""
MAX_TEXT_CHARS = 300
"""Longest accepted question, option, class name or attribute."""
CUSTOM_ID = "custom"
MAX_PENDING_RUNS = 24
"""Model runs in progress or waiting at once (each waits in a worker thread; the page has
``layout.MAX_THREADS``); further runs are refused at once with ``BUSY_MESSAGE``."""
BUSY_MESSAGE = "the model is busy with other visitors' runs; please retry in a minute"


@dataclass(frozen=True, slots=True)
class LiveResult:
    """The outcome of one live run, ready for the page."""

    sample: SampleResult
    """The per-item record, exactly as ``samples.jsonl`` would hold it."""
    probabilities: pd.DataFrame
    """Columns ``option`` (``A. text``), ``probability`` (softmax of the option-letter scores), ``chosen``."""
    answer_markdown: str
    """The chosen option, whether it is right, and the model used."""


def live_config(model_name: str) -> RunConfig:
    """Options of a live run: both metrics, option letters scored (so probabilities exist)."""
    from mmspubench.eval.prompts import prompt_spec

    return RunConfig(
        model=model_name, dataset="space", answer_mode="logprob", batch_size=8, prompts=prompt_spec()
    )


def _text(value: str | None, field: str) -> str:
    text = (value or "").strip()
    if not text:
        raise MMSpuBenchError(f"field {field!r} is empty; please fill it in")
    if len(text) > MAX_TEXT_CHARS:
        raise MMSpuBenchError(
            f"field {field!r} has {len(text)} characters; at most {MAX_TEXT_CHARS} are accepted"
        )
    return text


def parse_attributes(text: str | None, field: str) -> tuple[str, ...]:
    """Attributes typed one per line (or separated by ``;``), between 1 and 5 of them."""
    parts = [p.strip() for line in (text or "").splitlines() for p in line.split(";")]
    values = tuple(_text(p, field) for p in parts if p)
    if not MIN_ATTRIBUTES <= len(values) <= MAX_ATTRIBUTES:
        raise MMSpuBenchError(
            f"field {field!r} has {len(values)} attributes; expected {MIN_ATTRIBUTES} to {MAX_ATTRIBUTES}, "
            "one per line"
        )
    return values


def load_upload(path: str | Path | None) -> Image:
    """An uploaded picture, checked on its bytes first (format, size, pixel count), then decoded as RGB.

    A multi-picture JPEG (``MPO``, as phones write) is a JPEG: its first frame is used.
    """
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    file, fmt = check_upload(path, MAX_UPLOAD_BYTES, MAX_UPLOAD_PIXELS)
    if file.suffix.lower() not in UPLOAD_EXTENSIONS:
        raise MMSpuBenchError(
            f"{shown_name(file.name)} is a {fmt} picture, but its name ends in "
            f"{file.suffix or 'no extension'}; rename it to end in {', '.join(UPLOAD_EXTENSIONS)}"
        )
    try:
        with PILImage.open(file, formats=[fmt, "MPO"] if fmt == "JPEG" else [fmt]) as image:
            image.seek(0)
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, PILImage.DecompressionBombError) as err:
        raise MMSpuBenchError(
            f"{shown_name(file.name)} is not a readable image ({type(err).__name__})"
        ) from None


def custom_item(
    image: Image,
    question: str | None,
    options: Sequence[str | None],
    answer: str | None,
    class_name: str | None,
    core: str | None,
    spurious: str | None,
) -> Item:
    """An item typed in by a visitor, with the same limits as the dataset's."""
    if len(options) != NUM_OPTIONS:
        raise MMSpuBenchError(f"expected {NUM_OPTIONS} options, got {len(options)}")
    texts = tuple(_text(o, f"option {letter}") for o, letter in zip(options, ANSWER_LETTERS, strict=True))
    if len(set(texts)) != len(texts):
        raise MMSpuBenchError("two options have the same text; the four options must differ")
    letter = (answer or "").strip().upper()
    if letter not in ANSWER_LETTERS:
        raise MMSpuBenchError(f"correct answer {answer!r}: expected one of {', '.join(ANSWER_LETTERS)}")
    return Item(
        id=CUSTOM_ID,
        image=image,
        question=_text(question, "question"),
        options=texts,
        answer=letter,
        class_name=_text(class_name, "class name"),
        core_attributes=parse_attributes(core, "core attributes"),
        spurious_attributes=parse_attributes(spurious, "spurious attributes"),
        # Typed items carry no annotated type; the first type is a placeholder the page never shows.
        spurious_types=(TYPE_NAMES[0],),
        source="synthetic",
    )


def option_probabilities(item: Item, sample: SampleResult) -> pd.DataFrame:
    """Softmax over the four option-letter log-probabilities (probabilities among the options)."""
    scores = sample.option_scores
    if scores is None or len(scores) != len(item.options):
        raise MMSpuBenchError("the run recorded no option scores (expected answer mode 'logprob')")
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    return pd.DataFrame(
        {
            "option": [
                f"{letter}. {text}" for letter, text in zip(ANSWER_LETTERS, item.options, strict=True)
            ],
            "probability": [w / total for w in weights],
            "chosen": ["chosen" if letter == sample.prediction else "other" for letter in ANSWER_LETTERS],
        }
    )


class ModelCache:
    """At most one loaded model at a time, loaded on first use, shared by every visitor.

    Loading and scoring hold one lock, so one model run happens at a time and no two threads load
    (or evict) a model at once. At most ``max_pending`` runs are in progress or waiting for the
    lock; one more is refused at once with ``BUSY_MESSAGE`` (the model's own bounded queue, so the
    page's queue stays free for cheap reads).
    """

    def __init__(
        self,
        allowed: Sequence[str],
        loader: Callable[[str | Path], VisionLanguageModel] | None = None,
        max_pending: int = MAX_PENDING_RUNS,
    ) -> None:
        self.allowed: tuple[str, ...] = (BUNDLED_CHOICE, *[a for a in allowed if a != BUNDLED_CHOICE])
        self._loader = loader or _default_loader
        self._lock = threading.Lock()
        # The model's own bounded queue: runs in progress or waiting; more are refused at once.
        self._pending = threading.BoundedSemaphore(max_pending)
        self._name: str | None = None
        self._model: VisionLanguageModel | None = None

    def _get(self, choice: str) -> VisionLanguageModel:
        if choice not in self.allowed:
            raise MMSpuBenchError(f"model {choice!r} is not offered here; choose one of {list(self.allowed)}")
        if self._name != choice or self._model is None:
            self._model = None  # free the previous model before loading the next
            source: str | Path = choice
            if choice == BUNDLED_CHOICE:
                from mmspubench.eval.bundled import bundled_model_dir

                source = bundled_model_dir()
            self._model = self._loader(source)
            self._name = choice
        return self._model

    def run(self, choice: str, item: Item) -> LiveResult:
        """Score ``item`` with the model ``choice``: answer, option probabilities and CGLA."""
        from mmspubench.eval.runner import evaluate_item

        if not self._pending.acquire(blocking=False):
            raise MMSpuBenchError(BUSY_MESSAGE)
        try:
            with self._lock:
                model = self._get(choice)
                sample = evaluate_item(model, item, live_config(choice))
        finally:
            self._pending.release()
        frame = option_probabilities(item, sample)
        chosen = frame.loc[frame["chosen"] == "chosen", "option"].iloc[0]
        verdict = "correct" if sample.correct else f"wrong (correct: {item.answer})"
        answer_markdown = f"**Answer: {escape_cell(chosen)}** ({verdict}) · model: {escape_cell(choice)}"
        return LiveResult(sample=sample, probabilities=frame, answer_markdown=answer_markdown)


def _default_loader(source: str | Path) -> VisionLanguageModel:
    from mmspubench.eval.backends.transformers.loading import load_model
    from mmspubench.space.zerogpu import live_device

    return load_model(
        source, device=live_device(), dtype="float32", batch_size=8, scorer="fast", trust_remote_code=False
    )
