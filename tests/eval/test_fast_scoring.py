"""The fast scorer equals the plain scorer on every tiny family, and falls back where it must."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mmspubench.eval import prompts
from mmspubench.eval.backends.transformers import fast_families, fast_scoring, scoring
from mmspubench.eval.backends.transformers.adapter import TransformersVLM
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.backends.transformers.prefix_plan import TokenView, make_plan, split_passes
from mmspubench.eval.checkpoint import encoding
from mmspubench.eval.protocol import ScoreRequest

from tests.eval.tiny_models import FAMILIES, make_image, tiny_model_dir

EXACT = [f for f in FAMILIES if f in fast_scoring.EXACT_FAMILIES]

CLASS_NAMES = (" dog", " golden cat", " red striped circle tree")
ATTRIBUTES = (
    "red striped background",
    "a dog",
    "small round shape near the wall",
    "dark",
    "upside down moon leaf",
)


def _adapter(family: str, root: Path, batch_size: int = 2) -> TransformersVLM:
    """The family's tiny model, loaded once per worker for each batch size: the tests read it (one
    that changes it loads its own, :func:`_fresh_adapter`)."""
    return _loaded(family, root, batch_size)


@functools.cache
def _loaded(family: str, root: Path, batch_size: int) -> TransformersVLM:
    return _fresh_adapter(family, root, batch_size)


def _fresh_adapter(family: str, root: Path, batch_size: int = 2) -> TransformersVLM:
    return load_model(tiny_model_dir(family, root), batch_size=batch_size, scorer="fast")


def _requests(adapter: TransformersVLM, n_items: int = 3) -> list[ScoreRequest]:
    """Per item: CGLA conditions (2 to 5 attributes) and the four option letters, one image each.

    Item 1 gets a different PIL object with the same pixels as item 0, which must group with it.
    """
    out = []
    images = [make_image(0), make_image(0), *(make_image(s) for s in range(2, n_items + 1))]
    for item in range(n_items):
        image = images[item]
        class_name = CLASS_NAMES[item % len(CLASS_NAMES)]
        for attribute in ATTRIBUTES[: 2 + item % 4]:
            out.append(ScoreRequest(image, adapter.render(prompts.cgla_prompt(attribute)), class_name))
        mcq = adapter.render(
            prompts.mcq_prompt(f"What is in image {item}?", ["dog", "cat", "car", "tree"], "logprob")
        )
        out.extend(ScoreRequest(image, mcq, letter) for letter in prompts.letter_continuations())
    return out


@pytest.mark.parametrize("family", EXACT)
@pytest.mark.parametrize("batch_size", [1, 3])
def test_fast_equals_plain_on_every_condition_and_option(
    family: str, batch_size: int, session_cache: Path
) -> None:
    adapter = _adapter(family, session_cache, batch_size)
    requests = _requests(adapter)
    plain = scoring.score_plain(adapter, requests)
    fast = fast_scoring.score_fast(adapter, requests)
    assert len(fast) == len(plain) == len(requests)
    for p, f in zip(plain, fast, strict=True):
        assert f == pytest.approx(p, abs=1e-4)
    # The fast path really shares work: far fewer tokens than one full pass per request.
    encoded = [fast_scoring.encode(adapter, r) for r in requests]
    plan = fast_scoring.plan_call(adapter.model, encoded, requests, batch_size=batch_size)
    assert plan.processed_tokens < 0.6 * sum(e.ids.shape[0] for e in encoded)


@pytest.mark.parametrize("family", EXACT)
def test_order_and_single_request(family: str, session_cache: Path) -> None:
    adapter = _adapter(family, session_cache)
    requests = _requests(adapter, n_items=2)
    plain = scoring.score_plain(adapter, requests)
    assert fast_scoring.score_fast(adapter, requests[::-1]) == pytest.approx(plain[::-1], abs=1e-4)
    assert fast_scoring.score_fast(adapter, requests[:1]) == pytest.approx(plain[:1], abs=1e-4)
    assert fast_scoring.score_fast(adapter, []) == []


@pytest.mark.parametrize("family", EXACT)
def test_chunk_split_into_several_suffix_passes(family: str, session_cache: Path) -> None:
    """Items with 2 and 5 conditions in one call: their packed rows go in separate suffix passes."""
    adapter = _adapter(family, session_cache, batch_size=4)
    requests: list[ScoreRequest] = []
    for seed, count in ((2, 2), (3, 5), (4, 5)):
        image = make_image(seed)
        requests.extend(
            ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), " golden cat")
            for a in ATTRIBUTES[:count]
        )
    encoded = [fast_scoring.encode(adapter, r) for r in requests]
    plan = fast_scoring.plan_call(adapter.model, encoded, requests, batch_size=4)
    assert len(plan.chunks) == 1 and len(plan.chunks[0].suffix_passes) == 2
    assert fast_scoring.score_fast(adapter, requests) == pytest.approx(
        scoring.score_plain(adapter, requests), abs=1e-4
    )


@pytest.mark.parametrize("family", EXACT)
def test_images_of_different_sizes_in_one_call(family: str, session_cache: Path) -> None:
    """Different sizes give different grids, crops or token counts: separate chunks, same scores."""
    adapter = _adapter(family, session_cache, batch_size=4)
    requests: list[ScoreRequest] = []
    for seed, size in ((1, (48, 40)), (2, (64, 32)), (3, (40, 64)), (4, (48, 40))):
        image = make_image(seed, size)
        requests.extend(
            ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), " dog") for a in ATTRIBUTES[:3]
        )
    assert fast_scoring.score_fast(adapter, requests) == pytest.approx(
        scoring.score_plain(adapter, requests), abs=1e-4
    )


def test_each_image_processed_once_per_call(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = _adapter("llava", session_cache)
    requests = _requests(adapter, n_items=3)  # three items, two image objects with equal pixels
    inner = adapter.processor.image_processor
    seen: list[int] = []
    real_call = type(inner).__call__

    def counting(self: Any, images: Any, **kwargs: Any) -> Any:
        seen.append(id(images[0] if isinstance(images, list) else images))
        return real_call(self, images, **kwargs)

    monkeypatch.setattr(type(inner), "__call__", counting)
    expected = scoring.score_plain(adapter, requests)
    plain_calls = len(seen)
    seen.clear()
    assert fast_scoring.score_fast(adapter, requests) == pytest.approx(expected, abs=1e-4)
    assert plain_calls == 2 * len(requests)  # context and context + continuation, per request
    assert len(seen) == len({id(r.image) for r in requests}) == 3


def test_same_pixels_group_and_different_pixels_do_not(session_cache: Path) -> None:
    adapter = _adapter("llava", session_cache)
    context = adapter.render(prompts.cgla_prompt("dark"))
    a, b, c = make_image(0), make_image(0), make_image(5)
    requests = [ScoreRequest(img, context, " dog") for img in (a, b, c)]
    encoded = [fast_scoring.encode(adapter, r) for r in requests]
    plan = fast_scoring.plan_call(adapter.model, encoded, requests, batch_size=1)
    assert plan.group_of[0] == plan.group_of[1] != plan.group_of[2]


def test_qwen2_vl_needs_its_3d_positions(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions matter: with plain 1-D positions instead of the 3-D ones, Qwen2-VL scores move."""
    if "qwen2_vl" not in EXACT:
        pytest.skip("Qwen2-VL is not on the fast path")
    adapter = _adapter("qwen2_vl", session_cache)
    requests = _requests(adapter, n_items=1)
    plain = scoring.score_plain(adapter, requests)
    real_encode = fast_scoring.encode

    def encode_without_positions(
        adapter: Any, request: ScoreRequest, processor: Any = None
    ) -> fast_scoring.Encoded:
        enc = real_encode(adapter, request, processor)
        return fast_scoring.Encoded(enc.ids, enc.n_context, enc.token_inputs, enc.image_inputs, None)

    right = fast_scoring.score_fast(adapter, requests)
    monkeypatch.setattr(encoding, "encode", encode_without_positions)
    wrong = fast_scoring.score_fast(adapter, requests)
    right_gap = max(abs(p - r) for p, r in zip(plain, right, strict=True))
    wrong_gap = max(abs(p - w) for p, w in zip(plain, wrong, strict=True))
    # A random tiny model is barely sensitive to positions, hence the small threshold; the exact
    # path matches to float32 rounding.
    assert wrong_gap > 1e-5
    assert right_gap < wrong_gap / 10


def _fake_model(config: Any) -> Any:
    return SimpleNamespace(config=config)


@pytest.mark.parametrize("family", sorted(fast_scoring.FALLBACKS))
def test_every_named_fallback_is_reported(family: str) -> None:
    config = SimpleNamespace(model_type=family)
    assert fast_scoring.fallback_reason(_fake_model(config)) == fast_scoring.FALLBACKS[family]


def test_unknown_family_recurrent_layers_and_sliding_window(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import CLIPVisionConfig, LlavaConfig, MistralConfig, Qwen3_5Config

    assert (
        fast_scoring.fallback_reason(_fake_model(SimpleNamespace(model_type="blip_9")))
        == fast_scoring.NOT_VERIFIED
    )
    small: dict[str, Any] = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
    }
    sliding = LlavaConfig(
        vision_config=CLIPVisionConfig(**small), text_config=MistralConfig(sliding_window=8, **small)
    )
    # A sliding window is exact while every request of a call fits in it (checked per call).
    assert fast_scoring.fallback_reason(_fake_model(sliding)) is None
    assert fast_families.sliding_window(_fake_model(sliding)) == 8
    assert fast_scoring.call_fallback_reason(_fake_model(sliding), [3, 7]) is None
    reason = fast_scoring.call_fallback_reason(_fake_model(sliding), [3, 8])
    assert reason is not None and reason.startswith(fast_families.SLIDING_WINDOW) and "8 tokens" in reason
    full = LlavaConfig(
        vision_config=CLIPVisionConfig(**small), text_config=MistralConfig(sliding_window=None, **small)
    )
    assert fast_scoring.fallback_reason(_fake_model(full)) is None
    assert fast_scoring.call_fallback_reason(_fake_model(full), [5000]) is None
    text_config = full.text_config
    assert text_config is not None and not isinstance(text_config, dict)
    text_config._attn_implementation = "flash_attention_2"
    reason = fast_scoring.fallback_reason(_fake_model(full))
    assert reason is not None and reason.startswith(fast_families.NO_CUSTOM_MASK)
    # Recurrent (linear-attention) layers: never on the fast path, even for a listed family.
    monkeypatch.setattr(fast_families, "EXACT_FAMILIES", fast_families.EXACT_FAMILIES | {"qwen3_5"})
    hybrid = Qwen3_5Config(text_config={**small, "layer_types": ["linear_attention", "full_attention"]})
    assert fast_scoring.fallback_reason(_fake_model(hybrid)) == fast_families.RECURRENT_LAYERS


def test_eager_attention_equals_plain(session_cache: Path) -> None:
    """The packed suffix pass's additive mask also works with eager attention."""
    adapter = _fresh_adapter("llava", session_cache)  # changed below: not the shared one
    adapter.model.set_attn_implementation("eager")
    requests = _requests(adapter, n_items=2)
    assert fast_scoring.score_fast(adapter, requests) == pytest.approx(
        scoring.score_plain(adapter, requests), abs=1e-4
    )


def test_adapter_routes_by_scorer(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_fast(adapter: Any, requests: Any) -> list[float]:
        calls.append("fast")
        return [0.0]

    monkeypatch.setattr(fast_scoring, "score_fast", fake_fast)
    folder = tiny_model_dir("llava", session_cache)
    request = _requests(load_model(folder), n_items=1)[:1]
    load_model(folder, scorer="plain").score(request)
    assert calls == []
    load_model(folder, scorer="fast").score(request)
    assert calls == ["fast"]


# Planning, by hand. Image token = 9; ids are (context | continuation).
def _view(ids: tuple[int, ...], n_context: int, image: str = "x") -> TokenView:
    last = max((i for i, t in enumerate(ids) if t == 9), default=-1)
    return TokenView(ids=ids, n_context=n_context, image_key=image, last_image_index=last, batch_key=())


def test_plan_by_hand() -> None:
    views = [
        _view((1, 9, 9, 5, 6, 7, 20), 6),  # attribute 5 6 7, continuation 20
        _view((1, 9, 9, 5, 8, 7, 20, 21), 6),  # attribute 5 8 7, continuation 20 21
        _view((1, 9, 9, 5, 6, 7, 30), 6),  # same context as the first: prefix stops at the context end
        _view((1, 9, 9, 5, 6, 7, 20), 6, image="y"),  # another image: its own group
        _view((2, 9, 9, 5, 6, 7, 20), 6),  # same image, other head before the image: its own group
    ]
    plan = make_plan(views, prefix_batch=2)
    assert plan.group_of == (0, 0, 0, 1, 2)
    assert [g.prefix_len for g in plan.groups] == [4, 6, 6]
    assert plan.groups[0].members == (0, 2, 1)  # sorted by ids
    # Group 0 feeds (6 7), (6 7), (8 7 20): the equal feeds packed once, a row of 5; groups 1
    # and 2 feed nothing: their one token is predicted by the prefix's last position.
    assert len(plan.chunks) == 2
    first, second = plan.chunks
    assert first.groups == (0,) and first.suffix_passes == ((0, 1, 5),)
    assert second.groups == (1, 2) and second.suffix_passes == ((0, 2, 0),)
    assert plan.processed_tokens == (4 + 5) + 6 * 2


def test_plan_splits_a_bucket_where_it_pays() -> None:
    # Same image, two prompts that share only the image (like CGLA conditions and option letters).
    views = [
        _view((9, 1, 2, 3, 4, 5, 6, 10, 20), 8),
        _view((9, 7, 7, 7, 7, 7, 7, 11, 22), 8),
        _view((9, 1, 2, 3, 4, 5, 6, 12, 21), 8),
        _view((9, 7, 7, 7, 7, 7, 7, 13, 23), 8),
    ]
    plan = make_plan(views, prefix_batch=2)
    # One shared run would feed every request's text (1 + 4 * 7 tokens); two runs run each text
    # once and feed one token per request (2 * (7 + 2)).
    assert plan.group_of == (0, 1, 0, 1)
    assert [g.prefix_len for g in plan.groups] == [7, 7]
    assert plan.processed_tokens == 18


def test_plan_shares_equal_feeds() -> None:
    # Two prompts of one image, each with two one-token continuations (like two rotations' letters):
    # one run, each prompt's text fed once (1 + 2 * 7), not once per continuation (1 + 4 * 7).
    views = [
        _view((9, 1, 2, 3, 4, 5, 6, 10, 20), 8),
        _view((9, 7, 7, 7, 7, 7, 7, 11, 22), 8),
        _view((9, 1, 2, 3, 4, 5, 6, 10, 21), 8),
        _view((9, 7, 7, 7, 7, 7, 7, 11, 23), 8),
    ]
    plan = make_plan(views, prefix_batch=2)
    assert plan.group_of == (0, 0, 0, 0)
    assert plan.processed_tokens == 1 + 2 * 7


def test_split_passes_by_hand() -> None:
    # Rows of width 2 and 3 share a pass (32 + 2 * 3 = 38 tokens); the row of 40 gets its own
    # (32 + 40) rather than padding the others to 40 (32 + 3 * 40).
    assert split_passes([0, 2, 3, 40]) == ((0, 1, 0), (1, 3, 3), (3, 4, 40))
    assert split_passes([5, 5]) == ((0, 2, 5),)
    assert split_passes([0, 0]) == ((0, 2, 0),)


def test_plan_rejects_bad_views() -> None:
    with pytest.raises(ValueError, match="context tokens"):
        make_plan([_view((1, 2), 2)], prefix_batch=1)
    with pytest.raises(ValueError, match="continuation"):
        make_plan([_view((1, 2, 9), 2)], prefix_batch=1)
    with pytest.raises(ValueError, match="batch size"):
        make_plan([_view((1, 2), 1)], prefix_batch=0)
