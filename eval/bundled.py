"""The bundled small models.

``bundled_model_dir()`` is the default model of ``eval`` and of the Space: a tiny LLaVA-architecture
model trained on the synthetic twin with a strong class-spurious correlation (shipped in
``eval/assets/tiny-llava-biased``, trained by ``mmspubench.eval.train_tiny``), a positive control
for the bias the benchmark measures.

``random_model_dir()`` is a tiny randomly initialised model of the same architecture, built on
first use: the tokenizer is trained with ``tokenizers`` on a fixed word corpus, the weights are
drawn from a fixed seed, and the folder is written with ``save_pretrained`` so that it loads
through exactly the ``from_pretrained(folder)`` path a Hub model takes. The same builders make the
tiny models of the test suite and the starting point of training.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mmspubench.dataset_builder.defaults import cache_root, materialise

if TYPE_CHECKING:
    from transformers import LlavaConfig, PreTrainedTokenizerBase

BUNDLED_MODEL_VERSION = "tiny-llava-v1"
"""Builder version, part of the cache folder's name; bump it whenever the builder's code changes."""

BUNDLED_SEED = 1234
"""Seed of the bundled model's random weights."""

# Words the tokenizer learns whole: prompt words, option letters and the vocabulary of the
# synthetic split (class names, core and spurious attribute words), so that class names become a
# few tokens each as they would with a real tokenizer.
_CORPUS_TEXT = """
    a an the of in on at with and or is it this that what which who image photo picture shows
    object main class name answer question option options choose letter best describes following
    system user assistant you are helpful model look carefully reply only A B C D yes no
    circle square triangle star hexagon cross heart diamond ring disc bar arrow moon leaf
    red green blue yellow orange purple pink brown black white gray grey dark light bright pale
    striped dotted checkered plain smooth rough noisy blurry sharp wavy grid pattern texture noise
    background foreground sky grass sand water snow wall floor road field forest city room indoor outdoor
    small large big tiny huge medium size relative upright rotated tilted upside down left right top bottom
    shadow lit lighting shadows sunny dim perspective angle view front side above below shape round pointed
    edge corner outline filled hollow colored colorization co occurring objects next to near beside
    dog cat car tree bird fish horse cup chair table house boat plane ball book lamp clock flower
    core spurious attribute feature features has have shown visible
"""
CORPUS_WORDS: tuple[str, ...] = tuple(_CORPUS_TEXT.split())
"""Base words of the tokenizer's training corpus."""


def bundled_corpus_words() -> tuple[str, ...]:
    """The bundled tokenizer's words: the base words plus every word of the synthetic split's
    vocabulary (class names, core and spurious attribute texts, questions) and of the eval prompts,
    in a fixed order."""
    from mmspubench.dataset_builder import synth_vocab
    from mmspubench.eval import prompts

    texts = [c.name + " " + " ".join(c.core_attributes) for c in synth_vocab.CLASSES]
    texts += [f"{v.text} {v.phrase}" for values in synth_vocab.SPURIOUS_VALUES.values() for v in values]
    texts += [*synth_vocab.POSITIONS, *synth_vocab.QUESTION_TEMPLATES]
    texts += [v for k, v in sorted(vars(prompts).items()) if k.isupper() and isinstance(v, str)]
    found = re.findall(r"[A-Za-z]+", " ".join(texts))
    return tuple(dict.fromkeys([*CORPUS_WORDS, *found]))


def bundled_model_name() -> str:
    """Cache folder name: builder version + a digest of the corpus, so a vocabulary change rebuilds."""
    digest = hashlib.sha256("\n".join(bundled_corpus_words()).encode()).hexdigest()[:10]
    return f"{BUNDLED_MODEL_VERSION}-{BUNDLED_SEED}-{digest}"


TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>\n"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML-like template of the bundled model: the image becomes one ``<image>`` placeholder."""

_BASE_SPECIAL = ("<unk>", "<s>", "</s>", "<pad>")


def training_corpus(words: Sequence[str]) -> list[str]:
    """Deterministic sentences mixing ``words`` so that common words and word pairs get merged."""
    lines = []
    n = len(words)
    for step in (1, 3, 7, 11):
        for start in range(n):
            lines.append(" ".join(words[(start + k * step) % n] for k in range(12)))
    lines.extend(w.capitalize() + "." for w in words)
    return lines


def train_tokenizer(
    extra_special: Sequence[str],
    *,
    named_special: dict[str, str] | None = None,
    vocab_size: int = 1000,
    words: Sequence[str] = CORPUS_WORDS,
    add_bos: bool = True,
    bos: str = "<s>",
    eos: str = "</s>",
) -> PreTrainedTokenizerBase:
    """A byte-level BPE tokenizer trained on :func:`training_corpus`; every text is encodable.

    ``extra_special`` are added as special tokens (image placeholders, chat markers);
    ``named_special`` ones also become tokenizer attributes (e.g. ``{"boi_token": "<start_of_image>"}``
    gives ``tokenizer.boi_token``), as some processors expect. With ``add_bos`` the tokenizer
    prepends the BOS token, as Llama's does.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    named = dict(named_special or {})
    specials = list(dict.fromkeys([*_BASE_SPECIAL, bos, eos, *extra_special, *named.values()]))
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_corpus(words), trainer)
    if add_bos:
        bos_id = tok.token_to_id(bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
        )
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens=named or [t for t in specials if t not in (*_BASE_SPECIAL, bos, eos)],
    )


def build_tiny_llava(
    folder: Path,
    *,
    seed: int = BUNDLED_SEED,
    image_size: int = 32,
    patch_size: int = 8,
    words: Sequence[str] | None = None,
) -> Path:
    """Write a tiny random LLaVA (CLIP-like vision tower + Llama LM) with processor to ``folder``.

    The tokenizer is trained on ``words`` (default: :func:`bundled_corpus_words`).
    """
    import torch
    from transformers import LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tokenizer = train_tokenizer(
        ["<image>", "<|im_start|>", "<|im_end|>"], words=bundled_corpus_words() if words is None else words
    )
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=TINY_CHAT_TEMPLATE,
    )
    config = _tiny_llava_config(tokenizer, image_size, patch_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _tiny_llava_config(tokenizer: PreTrainedTokenizerBase, image_size: int, patch_size: int) -> LlavaConfig:
    """Sizes of the tiny random LLaVA: a 2-layer, 32-wide CLIP-like tower and Llama LM."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    assert isinstance(image_token_id, int)
    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch_size,
        projection_dim=32,
    )
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token_id,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )


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
