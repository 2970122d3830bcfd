"""Continuation scoring: hand-computed log-probabilities, equality with a plain forward pass, batching."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.transformers.adapter import TransformersVLM
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.checkpoint.encoding import collate
from mmspubench.eval.checkpoint.hooks import hooks_for
from mmspubench.eval.protocol import ChatPrompt, ModelInfo, ScoreRequest

from tests.eval.tiny_models import FAMILIES, make_image, tiny_model_dir

PROMPTS = [
    ("You are a careful assistant.", "red dog on grass", "It is a", " dog"),
    ("", "the image shows a striped texture", "Answer:", " cat"),
    ("Look carefully.", "small", "The object is a", " horse table"),
    ("You are a careful assistant.", "upside down blue star with a long shadow", "It is a", " circle"),
    ("Reply only", "x", "It is", " hexagon cross"),
]


@pytest.fixture(scope="module", params=FAMILIES)
def family_model(request: pytest.FixtureRequest, session_cache: Path) -> TransformersVLM:
    return load_model(tiny_model_dir(request.param, session_cache), batch_size=4, scorer="plain")


def _requests(model: TransformersVLM) -> list[ScoreRequest]:
    return [
        ScoreRequest(make_image(i, (40 + 9 * i, 56 - 5 * i)), model.render(ChatPrompt(s, u, a)), c)
        for i, (s, u, a, c) in enumerate(PROMPTS)
    ]


def _reference_logprob(model: TransformersVLM, request: ScoreRequest) -> float:
    """log P(continuation | context, image) from one plain forward pass over the joined text."""
    processor = model.processor
    text = request.context + request.continuation
    bos = processor.tokenizer.bos_token
    inputs = processor(
        images=[request.image],
        text=[text],
        return_tensors="pt",
        add_special_tokens=not text.startswith(bos or "\0"),
    )
    cont = processor.tokenizer(request.continuation, add_special_tokens=False)["input_ids"]
    ids = inputs["input_ids"][0]
    assert ids[-len(cont) :].tolist() == cont
    with torch.no_grad():
        logits = model.model(**inputs).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    n = ids.shape[0]
    return sum(float(log_probs[p - 1, ids[p]]) for p in range(n - len(cont), n))


def test_score_equals_plain_forward_pass(family_model: TransformersVLM) -> None:
    requests = _requests(family_model)
    scores = family_model.score(requests)
    for request, score in zip(requests, scores, strict=True):
        assert score == pytest.approx(_reference_logprob(family_model, request), abs=1e-4)
        assert score < 0


def test_batch_size_one_and_four_agree(family_model: TransformersVLM) -> None:
    requests = _requests(family_model)
    family_model.batch_size = 4
    batched = family_model.score(requests)
    family_model.batch_size = 1
    single = family_model.score(requests)
    family_model.batch_size = 4
    assert batched == pytest.approx(single, abs=1e-5)


def test_continuation_tokens_are_exactly_the_continuation(family_model: TransformersVLM) -> None:
    request = _requests(family_model)[2]
    encoded = family_model.encode(request)
    expected = family_model.processor.tokenizer(request.continuation, add_special_tokens=False)["input_ids"]
    assert encoded.continuation_ids == expected
    assert encoded.n_tokens == encoded.n_context + len(expected)


def test_context_not_a_prefix_is_refused(family_model: TransformersVLM) -> None:
    # "a " + "dog" tokenizes as "a" + " dog": the context's last token (the space) is not kept.
    context = family_model.render(ChatPrompt("", "red dog", "It is a "))
    with pytest.raises(MMSpuBenchError, match="not a prefix"):
        family_model.score([ScoreRequest(make_image(0), context, "dog")])


def test_empty_continuation_is_refused(family_model: TransformersVLM) -> None:
    context = family_model.render(ChatPrompt("", "red dog", "It is a"))
    with pytest.raises(MMSpuBenchError, match="adds no token"):
        family_model.score([ScoreRequest(make_image(0), context, "")])


class FavouredTokenModel(torch.nn.Module):
    """Logits we control: at every position the logit of token ``favoured`` is 2.0, all others 0."""

    def __init__(self, vocab: int, favoured: int, *, with_logits_to_keep: bool) -> None:
        super().__init__()
        self.vocab = vocab
        self.favoured = favoured
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.seen_pixels = False
        if with_logits_to_keep:
            self.forward = self._forward_keep  # type: ignore[method-assign]

    @property
    def device(self) -> torch.device:
        return self.anchor.device

    @property
    def dtype(self) -> torch.dtype:
        return self.anchor.dtype

    def _logits(self, input_ids: torch.Tensor, pixel_values: torch.Tensor) -> torch.Tensor:
        self.seen_pixels = pixel_values.shape[0] == input_ids.shape[0]
        logits = torch.zeros(*input_ids.shape, self.vocab)
        logits[..., self.favoured] = 2.0
        return logits

    def forward(self, input_ids: torch.Tensor, pixel_values: torch.Tensor, **kwargs: Any) -> SimpleNamespace:
        return SimpleNamespace(logits=self._logits(input_ids, pixel_values))

    def _forward_keep(
        self, input_ids: torch.Tensor, pixel_values: torch.Tensor, logits_to_keep: Any = 0, **kwargs: Any
    ) -> SimpleNamespace:
        logits = self._logits(input_ids, pixel_values)
        return SimpleNamespace(
            logits=logits[:, logits_to_keep] if torch.is_tensor(logits_to_keep) else logits
        )


@pytest.mark.parametrize("with_logits_to_keep", [False, True])
def test_hand_computed_log_probabilities(session_cache: Path, with_logits_to_keep: bool) -> None:
    folder = tiny_model_dir("llava", session_cache)
    processor = load_model(folder).processor
    tokenizer = processor.tokenizer
    vocab = len(tokenizer)
    dog = tokenizer(" dog", add_special_tokens=False)["input_ids"]
    other = tokenizer(" horse table", add_special_tokens=False)["input_ids"]
    assert dog[0] not in other
    fake = FavouredTokenModel(vocab, dog[0], with_logits_to_keep=with_logits_to_keep)
    info = ModelInfo(id="fake", path=str(folder), revision=None, dtype="float32", adapter="test")
    model = TransformersVLM(
        fake, processor, hooks=hooks_for("llava"), info=info, batch_size=2, scorer="plain"
    )
    assert model.accepts_logits_to_keep is with_logits_to_keep
    context = model.render(ChatPrompt("", "red dog", "It is a"))
    requests = [
        ScoreRequest(make_image(i), context, c) for i, c in enumerate([" dog", " horse table", " dog"])
    ]
    # log softmax of [2, 0, ..., 0] over V tokens: 2 - log(e^2 + V - 1) for the favoured token,
    # -log(e^2 + V - 1) for any other.
    norm = math.log(math.exp(2.0) + vocab - 1)
    dog_score = sum((2.0 if t == dog[0] else 0.0) - norm for t in dog)
    expected = [dog_score, -len(other) * norm, dog_score]
    assert model.score(requests) == pytest.approx(expected, abs=1e-5)
    assert fake.seen_pixels


def test_collate_pads_sequences_right_and_images_to_a_common_shape() -> None:
    from mmspubench.eval.checkpoint.encoding import EncodedRequest

    a = EncodedRequest(
        inputs={
            "input_ids": torch.tensor([[5, 6, 7]]),
            "attention_mask": torch.ones(1, 3, dtype=torch.long),
            "pixel_values": torch.ones(1, 2, 3),
        },
        n_context=2,
    )
    b = EncodedRequest(
        inputs={
            "input_ids": torch.tensor([[8, 9]]),
            "attention_mask": torch.ones(1, 2, dtype=torch.long),
            "pixel_values": torch.ones(1, 1, 3),
        },
        n_context=1,
    )
    batch = collate([a, b], pad_token_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 9, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["pixel_values"].shape == (2, 2, 3)
    assert batch["pixel_values"][1, 1].tolist() == [0, 0, 0]
    left = collate([a, b], pad_token_id=0, padding_side="left")
    assert left["input_ids"].tolist() == [[5, 6, 7], [0, 8, 9]]


def test_windows_of_requests_score_like_one_window(
    family_model: TransformersVLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmspubench.eval.backends.transformers import scoring

    requests = _requests(family_model)
    whole = family_model.score(requests)
    monkeypatch.setattr(scoring, "_WINDOW_BATCHES", 1)
    family_model.batch_size = 2
    windowed = family_model.score(requests)
    family_model.batch_size = 4
    assert windowed == pytest.approx(whole, abs=1e-5)


def test_position_hook_gives_qwen2_vl_3d_positions(session_cache: Path) -> None:
    qwen = load_model(tiny_model_dir("qwen2_vl", session_cache))
    request = _requests(qwen)[0]
    encoded = qwen.encode(request)
    positions = qwen.hooks.position_ids(qwen.model, encoded.inputs)
    assert positions is not None
    n = encoded.n_tokens
    assert tuple(positions.shape) == (3, 1, n)
    # The image grid takes fewer positions than tokens, so the last text position is below n - 1,
    # and text positions after the image still advance by one per token.
    assert int(positions[0, 0, -1]) < n - 1
    assert positions[:, 0, -2:].diff(dim=-1).tolist() == [[1], [1], [1]]
    llava = load_model(tiny_model_dir("llava", session_cache))
    assert llava.hooks.position_ids(llava.model, llava.encode(_requests(llava)[0]).inputs) is None


def test_end_token_appended_by_the_tokenizer_is_not_scored(session_cache: Path, tmp_path: Path) -> None:
    import shutil

    from tokenizers import Tokenizer, processors

    original = tiny_model_dir("llava", session_cache)
    folder = tmp_path / "eos-appending"
    shutil.copytree(original, folder)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    tok.save(str(folder / "tokenizer.json"))
    appending = load_model(folder, scorer="plain")
    plain = load_model(original, scorer="plain")
    context = plain.render(ChatPrompt("", "red dog", "It is a"))
    request = ScoreRequest(make_image(2), context, " horse table")
    assert appending.processor(images=[make_image(2)], text=[context])["input_ids"][0][-1] == eos
    encoded = appending.encode(request)
    assert eos not in encoded.inputs["input_ids"][0].tolist()
    assert encoded.continuation_ids == plain.encode(request).continuation_ids
    assert appending.score([request]) == pytest.approx(plain.score([request]), abs=1e-6)
