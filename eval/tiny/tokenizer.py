"""The tiny models' tokenizer: a byte-level BPE trained offline with ``tokenizers`` on a fixed corpus.

Every tiny model (the bundled ones, the test suite's, the benchmarks') gets its tokenizer here, so
that prompts render and tokenize the same way for all of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

IMAGE_TOKEN = "<image>"
"""The image placeholder of the tiny LLaVA's chat template."""
END_OF_TURN = "<|im_end|>"
"""End of a chat turn: learned after the answer in ``generate`` mode, so that generation stops."""

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
    from mmspubench.dataset_builder.synth import vocab as synth_vocab
    from mmspubench.eval import prompts

    texts = [c.name + " " + " ".join(c.core_attributes) for c in synth_vocab.CLASSES]
    texts += [f"{v.text} {v.phrase}" for values in synth_vocab.SPURIOUS_VALUES.values() for v in values]
    texts += [*synth_vocab.POSITIONS, *synth_vocab.QUESTION_TEMPLATES]
    texts += [v for k, v in sorted(vars(prompts).items()) if k.isupper() and isinstance(v, str)]
    found = re.findall(r"[A-Za-z]+", " ".join(texts))
    return tuple(dict.fromkeys([*CORPUS_WORDS, *found]))


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

THINK_MARKERS = ("<think>", "</think>")
"""The reasoning markers of the thinking control (the generic ``think`` style of
``mmspubench.eval.replies.reasoning``): special tokens of its tokenizer, kept when decoded."""
THINKING_CHAT_TEMPLATE = TINY_CHAT_TEMPLATE.replace(
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\n\n</think>\n\n' }}"
    "{% endif %}{% endif %}",
)
"""The bundled template with Qwen3's generation prompt: the model thinks unless told not to, and
``enable_thinking=False`` writes the empty reasoning block (how eval renders scored prompts)."""

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
