"""Processors without a video part, missing packages as one line, prefix-LM scoring, fallback reasons."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import torch
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.backends.transformers import fast_families, fast_scoring, scoring, suffix_packing
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.checkpoint import encoding, families, prefix_lm
from mmspubench.eval.protocol import ScoreRequest

from tests.eval.families.registry import family_dir
from tests.eval.tiny_models import make_image


@pytest.fixture(scope="module")
def family_root(session_cache: Path) -> Path:
    root = session_cache / "families"
    root.mkdir(exist_ok=True)
    return root


def _image_text_processor_classes() -> list[tuple[str, Any]]:
    """Processor classes of the image-text-to-text families that import here (no torchvision)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    found = []
    for family in sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES):
        name = PROCESSOR_MAPPING_NAMES.get(family)
        if not name:
            continue
        try:
            module = importlib.import_module(f"transformers.models.{family}.processing_{family}")
            cls = getattr(module, name)
        except (ImportError, AttributeError):
            continue
        found.append((family, cls))
    return found


def test_without_video_drops_only_the_video_part_of_every_processor_class() -> None:
    classes = _image_text_processor_classes()
    with_video = [(f, c) for f, c in classes if any("video" in a for a in c.get_attributes())]
    assert len(with_video) >= 8  # Qwen2/2.5/3-VL, GLM-4V, SmolVLM, InternVL, LLaVA-OneVision, ...
    for family, cls in with_video:
        stripped = families.without_video(cls)
        assert stripped.__name__ == cls.__name__ and issubclass(stripped, cls), family
        assert stripped.get_attributes() == [a for a in cls.get_attributes() if "video" not in a], family
    plain = next(c for f, c in classes if f == "llava")
    assert families.without_video(plain) is plain


@pytest.mark.parametrize("family", ["qwen3_vl", "llava_next_video"])
def test_video_processor_stand_in_refuses_videos(family: str, family_root: Path) -> None:
    if family == "llava_next_video":
        pytest.importorskip("transformers.models.llava_next_video")
    adapter = load_model(family_dir(family, family_root))
    assert isinstance(adapter.processor.video_processor, families.NoVideoProcessor)
    with pytest.raises(ValueError, match="without its video part"):
        adapter.processor.video_processor([make_image(1)])


@pytest.mark.parametrize(
    ("err", "package"),
    [
        (ModuleNotFoundError("No module named 'torchvision'", name="torchvision"), "torchvision"),
        (ModuleNotFoundError("No module named 'google.protobuf'", name="google.protobuf"), "protobuf"),
        (ModuleNotFoundError("No module named 'cv2'", name="cv2"), "opencv-python"),
        (
            ImportError("\nPixtralProcessor requires the Torchvision library but it was not found"),
            "torchvision",
        ),
        (ImportError("Package `num2words` is required to run SmolVLM processor."), "num2words"),
        (
            ValueError(
                "None of these classes could be imported. Missing optional dependencies: torchvision."
            ),
            "torchvision",
        ),
        (RecursionError("maximum recursion depth exceeded"), None),
    ],
)
def test_missing_package_named(err: BaseException, package: str | None) -> None:
    assert families.missing_package(err) == package


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (ImportError("Package `num2words` is required to run SmolVLM processor."), "pip install num2words"),
        (RecursionError("maximum recursion depth exceeded"), "RecursionError: maximum recursion depth"),
    ],
)
def test_processor_import_failure_is_one_line_naming_family(
    family_root: Path, monkeypatch: pytest.MonkeyPatch, raised: BaseException, expected: str
) -> None:
    def broken(folder: Path, trust_remote_code: bool, model_type: str) -> Any:
        raise raised

    monkeypatch.setattr(families, "load_processor", broken)
    with pytest.raises(MMSpuBenchError) as info:
        load_model(family_dir("qwen3_vl", family_root))
    message = str(info.value)
    assert len(message.splitlines()) == 1 and "(family qwen3_vl)" in message and expected in message


def test_smolvlm_without_num2words_names_the_package(
    family_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("num2words")
    folder = family_dir("smolvlm", family_root)
    import transformers.models.smolvlm.processing_smolvlm as smolvlm

    monkeypatch.setattr(smolvlm, "num2words", None)
    with pytest.raises(MMSpuBenchError, match=r"\(family smolvlm\).*pip install num2words$"):
        load_model(folder)


# PaliGemma: the continuation is the processor's answer suffix, scored exactly.
def _paligemma_by_hand(adapter: Any, request: ScoreRequest) -> float:
    """One forward pass over ``<image>*n <bos> context \\n continuation``, built token by token."""
    processor, model = adapter.processor, adapter.model
    tok = processor.tokenizer
    pixels = processor.image_processor([request.image], return_tensors="pt")["pixel_values"]
    prefix = [processor.image_token_id] * processor.image_seq_length + [tok.bos_token_id]
    assert request.context.startswith(processor.image_token)
    body = request.context.removeprefix(processor.image_token)
    prefix += tok(body + "\n", add_special_tokens=False)["input_ids"]
    answer = tok(request.continuation, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prefix + answer])
    types = torch.tensor([[0] * len(prefix) + [1] * len(answer)])
    with torch.inference_mode():
        logits = model(input_ids=ids, pixel_values=pixels, token_type_ids=types).logits[0].float()
    log_probs = logits.log_softmax(-1)
    return float(sum(log_probs[len(prefix) - 1 + k, t] for k, t in enumerate(answer)))


def test_paligemma_scores_the_answer_suffix_exactly(family_root: Path) -> None:
    adapter = load_model(family_dir("paligemma", family_root), batch_size=3)
    image = make_image(3)
    requests = [
        ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), c)
        for a in ("red striped background", "a dog")
        for c in (" golden cat", " dog")
    ]
    scores = adapter.score(requests)
    assert adapter.scorer_used == "plain"
    assert adapter.scorer_fallback_reason == fast_families.FALLBACKS["paligemma"]
    for request, score in zip(requests, scores, strict=True):
        assert score == pytest.approx(_paligemma_by_hand(adapter, request), abs=1e-5)
    # The bidirectional prefix matters: scoring the answer as part of the causal prompt differs.
    assert len({round(s, 6) for s in scores}) == len(scores)


def test_paligemma_without_chat_template_is_prompted_in_its_own_format(family_root: Path) -> None:
    folder = family_dir("paligemma", family_root)
    assert not (folder / "chat_template.jinja").exists()  # as on the Hub
    adapter = load_model(folder, batch_size=2)
    prompt = prompts.cgla_prompt("dark")
    context = adapter.render(prompt)
    assert context == f"<image>{prompt.system}\n{prompt.user_text}\n{prompt.assistant_prefix}"
    answers = adapter.generate([make_image(1), make_image(2)], [context, context], max_new_tokens=3)
    assert len(answers) == 2 and all(isinstance(a.text, str) for a in answers)


class _AppendingProcessor:
    """A processor that appends a newline token after every prompt and takes no suffix."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def __call__(self, images: Any, text: list[str], **kwargs: Any) -> Any:
        ids = self.tokenizer([t + "\n" for t in text], add_special_tokens=False, return_tensors="pt")
        return {"input_ids": ids["input_ids"], "attention_mask": ids["attention_mask"]}


def test_processor_that_appends_text_gets_its_own_diagnosis(family_root: Path) -> None:
    adapter = load_model(family_dir("qwen3_vl", family_root))
    processor = _AppendingProcessor(adapter.processor.tokenizer)
    request = ScoreRequest(make_image(1), "The object is:", " dog")
    with pytest.raises(MMSpuBenchError, match=r"appends .* after every prompt") as info:
        encoding.encode_request(processor, request, add_special_tokens=False)
    assert "separating space" not in str(info.value)
    assert prefix_lm.appended_tail([1, 2, 9], [1, 2, 5, 9]) == 1
    assert prefix_lm.appended_tail([1, 2, 3], [1, 2, 4]) == 0


def test_mllama_fast_carries_the_cross_attention_mask(
    family_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mllama's text reaches the image through cross-attention: exact with the mask, wrong without."""
    adapter = load_model(family_dir("mllama", family_root), batch_size=3)
    requests = []
    for image in (make_image(1), make_image(2, (64, 32))):
        requests += [
            ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), " golden cat")
            for a in ("dark", "a dog")
        ]
    plain = scoring.score_plain(adapter, requests)
    assert adapter.scorer_used == "fast"
    assert fast_scoring.score_fast(adapter, requests) == pytest.approx(plain, abs=1e-4)
    monkeypatch.setattr(suffix_packing, "SUFFIX_TOKEN_INPUTS", ())
    wrong = fast_scoring.score_fast(adapter, requests)
    assert max(abs(p - w) for p, w in zip(plain, wrong, strict=True)) > 1e-3


def test_fallback_reason_reaches_the_adapter(family_root: Path) -> None:
    fast = load_model(family_dir("qwen3_vl", family_root), scorer="fast")
    assert fast.scorer_used == "fast" and fast.scorer_fallback_reason is None
    plain = load_model(family_dir("qwen3_vl", family_root), scorer="plain")
    assert plain.scorer_used == "plain" and plain.scorer_fallback_reason is None


class _FlatOnly:
    """Wraps a processor and refuses nested image lists, as GOT-OCR2's does."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.layouts: list[str] = []

    def __call__(self, images: Any, **kwargs: Any) -> Any:
        nested = isinstance(images[0], list)
        self.layouts.append("nested" if nested else "flat")
        if nested:
            raise ValueError("Nested images are only supported with `multi_page` set to `True`.")
        return self.inner(images=images, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_generate_passes_a_flat_image_list_where_the_processor_wants_one(family_root: Path) -> None:
    adapter = load_model(family_dir("qwen3_vl", family_root), batch_size=2)
    context = adapter.render(prompts.cgla_prompt("dark"))
    images = [make_image(1), make_image(2), make_image(3)]
    expected = [a.text for a in adapter.generate(images, [context] * 3, max_new_tokens=3)]
    adapter.processor = _FlatOnly(adapter.processor)
    assert [a.text for a in adapter.generate(images, [context] * 3, max_new_tokens=3)] == expected
    # Nested first, then flat for the rest of the run.
    assert adapter.processor.layouts == ["nested", "flat", "flat"]


def test_fallback_family_goes_through_plain_and_says_why_once(
    family_root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    adapter = load_model(family_dir("paligemma", family_root), scorer="fast")
    image = make_image(2)
    requests = [
        ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), " dog") for a in ("dark", "a dog")
    ]
    expected = scoring.score_plain(adapter, requests)
    calls: list[int] = []
    real_plain = scoring.score_plain

    def spy(adapter: Any, requests: Any) -> list[float]:
        calls.append(len(requests))
        return real_plain(adapter, requests)

    monkeypatch.setattr(scoring, "score_plain", spy)
    monkeypatch.setattr(fast_scoring, "_logged", set())
    with caplog.at_level(logging.WARNING, logger="mmspubench.eval.backends.transformers.fast_scoring"):
        assert adapter.score(requests) == expected
        assert adapter.score(requests) == expected
    assert calls == [len(requests), len(requests)]
    reason = fast_families.FALLBACKS["paligemma"]
    logged = [r for r in caplog.records if "paligemma" in r.getMessage()]
    assert len(logged) == 1 and reason in logged[0].getMessage()
