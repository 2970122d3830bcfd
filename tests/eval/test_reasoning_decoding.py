"""A tokenizer that holds the reasoning markers as special tokens: the transformers adapter keeps
them in a reply (``skip_special_tokens`` would drop them), drops pad and end-of-sequence tokens as
before, and counts the reply's tokens and how it finished. The tiny LLaVA's own replies (no such
markers) decode exactly as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from mmspubench.eval.backends.transformers.adapter import TransformersVLM
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.checkpoint.decoding import ReplyDecoder, lost_markers, marker_ids, stop_ids
from mmspubench.eval.protocol import ChatPrompt

from tests.eval.tiny_models import make_image, tiny_model_dir


def _model(session_cache: Path, special: bool) -> TransformersVLM:
    model = load_model(tiny_model_dir("llava", session_cache), batch_size=2, scorer="plain")
    if special:
        model.processor.tokenizer.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    return model


def _answering(model: TransformersVLM, replies: list[list[int]]) -> None:
    """``model.generate`` answers each prompt with ``replies`` (pad after a short one), as a model
    that writes them would."""
    pad = model.pad_token_id

    def generate(**inputs: Any) -> torch.Tensor:
        ids = inputs["input_ids"]
        width = max(len(r) for r in replies)
        rows = [r + [pad] * (width - len(r)) for r in replies[: ids.shape[0]]]
        return torch.cat([ids, torch.tensor(rows, dtype=ids.dtype)], dim=1)

    model.model.generate = generate


def _words(model: TransformersVLM, text: str) -> list[int]:
    return list(model.processor.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_markers_that_are_special_tokens_are_kept_in_the_raw_output(session_cache: Path) -> None:
    model = _model(session_cache, special=True)
    tokenizer = model.processor.tokenizer
    think, close = tokenizer.convert_tokens_to_ids(["<think>", "</think>"])
    eos = stop_ids(model.model.generation_config, model.processor.tokenizer)[0]
    thought = _words(model, "maybe a dog")
    answer = _words(model, "B")
    full = [think, *thought, close, *answer, eos]
    cut = [think, *thought * len(full)][: len(full)]  # the budget spent inside the reasoning
    _answering(model, [full, cut])
    context = model.render(ChatPrompt("", "Which?", ""))
    replies = model.generate([make_image(0), make_image(1)], [context, context], max_new_tokens=len(full))
    assert tokenizer.decode(full, skip_special_tokens=True).find("<think>") < 0  # what it was before
    first, second = replies
    assert first.text.startswith("<think>") and "</think>" in first.text and first.text.endswith("B")
    assert "</s>" not in first.text and "<pad>" not in first.text  # the other special tokens dropped
    assert (first.finish_reason, first.completion_tokens, first.reasoning_tokens) == (
        "stop",
        len(full),
        len(thought) + 2,
    )
    assert second.text.startswith("<think>") and second.finish_reason == "length"
    assert second.completion_tokens == len(full) and second.reasoning_tokens is None
    assert first.prompt_tokens == second.prompt_tokens and first.prompt_tokens > 0
    assert first.seconds is not None and first.seconds == second.seconds  # the batch's time, shared
    assert model.reasoning_style == "none"  # the tiny template writes no <think>


def test_replies_without_lost_markers_decode_as_before(session_cache: Path) -> None:
    model = _model(session_cache, special=False)
    eos = stop_ids(model.model.generation_config, model.processor.tokenizer)[0]
    rows = [[*_words(model, "a red car"), eos], _words(model, "B <think> x </think> C")]
    _answering(model, rows)
    context = model.render(ChatPrompt("", "Which?", ""))
    replies = model.generate([make_image(0), make_image(1)], [context, context], max_new_tokens=16)
    pad = model.pad_token_id
    padded = [rows[0], rows[1] + [pad] * (len(rows[0]) - len(rows[1]))]
    before = model.processor.batch_decode(padded, skip_special_tokens=True)
    assert [r.text for r in replies] == before  # one batch_decode without special tokens, as before
    assert not model.decoder.lost


def test_only_markers_the_tokenizer_would_drop_are_kept_by_hand(session_cache: Path) -> None:
    tokenizer = _model(session_cache, special=True).processor.tokenizer
    tokenizer.add_tokens(["<|begin_of_box|>"])  # an added token that is not special: decoded anyway
    markers = marker_ids(tokenizer)
    assert set(markers.values()) == {"<think>", "</think>", "<|begin_of_box|>"}
    assert set(lost_markers(tokenizer, markers).values()) == {"<think>", "</think>"}
    decoder = ReplyDecoder(tokenizer, [tokenizer.eos_token_id])
    ids = tokenizer("<think>x</think><|begin_of_box|>C", add_special_tokens=False)["input_ids"]
    assert decoder.decode([ids]) == ["<think>x</think><|begin_of_box|>C"]


@pytest.mark.parametrize("template", ["{{ '<think>' }}", None])
def test_the_adapter_names_its_reasoning_style_from_the_template(
    session_cache: Path, template: str | None
) -> None:
    model = _model(session_cache, special=False)
    if template is not None:
        model.processor.chat_template = "{% if add_generation_prompt %}" + template + "{% endif %}"
    assert model.reasoning_style == ("think-open" if template else "none")


def test_the_vllm_engine_returns_generations_with_its_finish_reasons(
    session_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vLLM engine's ``generate`` over a stand-in ``vllm`` module (the engine is not installed
    where the fast tests run): markers kept, the engine's finish reasons, the prompt's tokens."""
    import sys
    from types import SimpleNamespace

    from mmspubench.eval.backends.vllm.engine import VLLMModel

    processor = _model(session_cache, special=True).processor
    tokenizer = processor.tokenizer
    think, close = tokenizer.convert_tokens_to_ids(["<think>", "</think>"])
    answers = [
        [think, *tokenizer("a dog", add_special_tokens=False)["input_ids"], close, 35],
        [think, 40, 41],
    ]

    def generate(prompts: list[Any], params: Any, use_tqdm: bool) -> list[Any]:
        return [
            SimpleNamespace(
                prompt_token_ids=p["ids"],
                outputs=[SimpleNamespace(token_ids=a, finish_reason=f)],
            )
            for p, a, f in zip(prompts, answers, ("stop", "length"), strict=True)
        ]

    stand_in = SimpleNamespace(SamplingParams=lambda **kwargs: kwargs)
    monkeypatch.setitem(sys.modules, "vllm", stand_in)
    engine = object.__new__(VLLMModel)
    engine.processor = processor
    engine.llm = SimpleNamespace(generate=generate)
    monkeypatch.setattr(VLLMModel, "prompt", lambda self, image, context: {"ids": [1, 2, 3]})
    first, second = engine.generate([None, None], ["a", "b"], max_new_tokens=3)
    assert first.text.startswith("<think>") and "</think>" in first.text
    assert (first.finish_reason, first.prompt_tokens, first.completion_tokens) == ("stop", 3, len(answers[0]))
    assert first.reasoning_tokens == len(answers[0]) - 1
    assert (second.finish_reason, second.completion_tokens) == ("length", 3)
