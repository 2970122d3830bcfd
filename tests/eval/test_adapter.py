"""The generic adapter on every tiny family: rendering, generation, Protocol, scorer dispatch."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from mmspubench.eval.backends.transformers.adapter import TransformersVLM
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.protocol import ChatPrompt, ScoreRequest, VisionLanguageModel

from tests.eval.tiny_models import FAMILIES, make_image, tiny_model_dir

IMAGE_TOKENS = {
    "llava": "<image>",
    "qwen2_vl": "<|image_pad|>",
    "idefics3": "<image>",
    "gemma3": "<start_of_image>",
}


@pytest.fixture(scope="module", params=FAMILIES)
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def model(family: str, session_cache: Path) -> TransformersVLM:
    return load_model(tiny_model_dir(family, session_cache), batch_size=3, scorer="plain")


def test_is_a_vision_language_model(model: TransformersVLM, family: str) -> None:
    assert isinstance(model, VisionLanguageModel)
    assert model.info.adapter == f"hf-image-text-to-text/{family}"
    assert model.info.dtype == "float32"
    assert model.info.revision is None
    assert Path(model.info.path).is_dir()


def test_render_puts_system_image_text_then_prefix(model: TransformersVLM, family: str) -> None:
    text = model.render(ChatPrompt("Be brief.", "red dog on grass", "It is a"))
    image = text.index(IMAGE_TOKENS[family])
    assert text.index("Be brief.") < image < text.index("red dog on grass")
    assert text.endswith("It is a")
    # The generation prompt sits between the user text and the assistant prefix.
    between = text[text.index("red dog on grass") + len("red dog on grass") : -len("It is a")]
    assert between.strip()


def test_render_without_system_sends_no_system_turn(model: TransformersVLM) -> None:
    with_system = model.render(ChatPrompt("Be brief.", "red dog", ""))
    without = model.render(ChatPrompt("", "red dog", ""))
    assert "Be brief." not in without
    assert "system" not in without.lower()
    assert len(without) < len(with_system)


def test_bos_is_never_doubled(model: TransformersVLM) -> None:
    tokenizer = model.processor.tokenizer
    request = ScoreRequest(make_image(1), model.render(ChatPrompt("", "red dog", "It is a")), " dog")
    ids = model.encode(request).inputs["input_ids"][0].tolist()
    assert ids.count(tokenizer.bos_token_id) <= 1


def test_generate_is_greedy_batched_and_returns_only_new_text(model: TransformersVLM) -> None:
    images = [make_image(i, (40 + 7 * i, 36)) for i in range(4)]
    contexts = [
        model.render(ChatPrompt("", f"question {w}", "Answer:"))
        for w in ("red", "a big dog", "x", "blue sky")
    ]
    model.batch_size = 3
    batched = model.generate(images, contexts, max_new_tokens=4)
    model.batch_size = 1
    single = model.generate(images, contexts, max_new_tokens=4)
    model.batch_size = 3
    assert len(batched) == 4
    assert [dataclasses.replace(g, seconds=None) for g in batched] == [
        dataclasses.replace(g, seconds=None) for g in single
    ]
    for answer, context in zip(batched, contexts, strict=True):
        assert isinstance(answer.text, str) and answer.finish_reason in ("stop", "length")
        assert answer.completion_tokens is not None and 1 <= answer.completion_tokens <= 4
        assert "Answer:" not in answer.text and not answer.text.startswith(context[:10])


def test_generate_refuses_mismatched_lengths(model: TransformersVLM) -> None:
    with pytest.raises(ValueError, match="images"):
        model.generate([make_image(0)], ["a", "b"], max_new_tokens=2)


def test_fast_scorer_is_used_when_asked(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def score_fast(adapter: TransformersVLM, requests: list[ScoreRequest]) -> list[float]:
        calls.append(len(requests))
        return [-1.5] * len(requests)

    from mmspubench.eval.backends.transformers import fast_scoring

    monkeypatch.setattr(fast_scoring, "score_fast", score_fast)
    folder = tiny_model_dir("llava", session_cache)
    fast = load_model(folder, scorer="fast")
    plain = load_model(folder, scorer="plain")
    request = ScoreRequest(make_image(0), fast.render(ChatPrompt("", "red", "It is a")), " dog")
    assert fast.scorer == "fast" and plain.scorer == "plain"
    assert fast.scorer_used == "fast" and plain.scorer_used == "plain"
    assert fast.score([request, request]) == [-1.5, -1.5]
    assert calls == [2]
    assert plain.score([request])[0] != -1.5
    assert calls == [2]
    fast.scorer = "plain"  # asking again decides again (the speed benchmark switches this way)
    assert (fast.scorer_used, fast.info.scorer_used) == ("plain", "plain")
    assert fast.score([request]) == plain.score([request]) and calls == [2]
    assert fast.score([]) == []


def test_image_placeholder_added_when_template_ignores_images(session_cache: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "text-template"
    shutil.copytree(tiny_model_dir("llava", session_cache), folder)
    (folder / "chat_template.jinja").write_text(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% for item in m['content'] %}{% if item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    model = load_model(folder, scorer="plain")
    text = model.render(ChatPrompt("", "red dog", "It is a"))
    assert text == "<|im_start|>user\n<image>\nred dog<|im_end|>\n<|im_start|>assistant\nIt is a"
    assert model.score([ScoreRequest(make_image(0), text, " dog")])[0] < 0
