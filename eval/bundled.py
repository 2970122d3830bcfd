"""The bundled small models.

``bundled_model_dir()`` is the default model of ``eval`` and of the Space: a tiny LLaVA-architecture
model trained on the synthetic twin with a strong class-spurious correlation (shipped in
``eval/assets/tiny-llava-biased``, trained by ``mmspubench.eval.tiny.train``), a positive control
for the bias the benchmark measures.

``random_model_dir()`` is a tiny randomly initialised model of the same architecture, built on
first use: the tokenizer is trained with ``tokenizers`` on a fixed word corpus, the weights are
drawn from a fixed seed, and the folder is written with ``save_pretrained`` so that it loads
through exactly the ``from_pretrained(folder)`` path a Hub model takes. It is made by the one tiny
LLaVA builder (``mmspubench.eval.tiny.llava``), which also makes the test suite's LLaVA and the
starting point of training.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from mmspubench.dataset_builder.defaults import cache_root, materialise

if TYPE_CHECKING:
    pass

BUNDLED_MODEL_VERSION = "tiny-llava-v2"
"""Builder version, part of the cache folder's name; bump it whenever the builder's code changes."""

BUNDLED_SEED = 1234
"""Seed of the bundled model's random weights."""


def bundled_model_name() -> str:
    """Cache folder name: builder version + a digest of the corpus, so a vocabulary change rebuilds."""
    from mmspubench.eval.tiny.tokenizer import bundled_corpus_words

    digest = hashlib.sha256("\n".join(bundled_corpus_words()).encode()).hexdigest()[:10]
    return f"{BUNDLED_MODEL_VERSION}-{BUNDLED_SEED}-{digest}"


ASSETS = Path(__file__).resolve().parent / "assets"
BIASED_MODEL = ASSETS / "tiny-llava-biased"
"""The shipped trained model whose training data tie each class to its spurious "home" values."""
BALANCED_MODEL = ASSETS / "tiny-llava-balanced"
"""Its twin, trained with the same budget on data without that correlation."""


def bundled_model_dir() -> Path:
    """Folder of the default model: the shipped tiny model trained with a planted spurious bias."""
    if not (BIASED_MODEL / "config.json").is_file():
        from mmspubench.errors import MMSpuBenchError

        raise MMSpuBenchError(
            f"{BIASED_MODEL}: the bundled model's files are missing; reinstall mm-spubench or pass --model"
        )
    return BIASED_MODEL


def random_model_dir() -> Path:
    """Folder of the tiny random model, built (deterministically) and cached on first use."""
    from mmspubench.eval.tiny.llava import build_tiny_llava

    return materialise(cache_root() / bundled_model_name(), build_tiny_llava)


def bundled_model_note() -> str:
    """Plain-language note on what the bundled model is and how to read its scores."""
    return (
        "Note: no --model was given, so the bundled model was used: a tiny LLaVA-architecture model "
        "(0.8 M parameters) trained on synthetic scenes in which each class appears with its own "
        "spurious cues 95% of the time. It is biased on purpose, as a positive control: it answers "
        "well when the cue agrees with the class and badly when the cue points at another class, as "
        "in the bundled synthetic release. Its scores say nothing about any real model; pass "
        "--model <Hub id or folder> to evaluate one."
    )
