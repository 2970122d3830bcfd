"""Gemma 3 on the fast scorer: image block inside the shared prefix, requests inside the sliding window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval import prompts
from mmspubench.eval.backends.transformers import fast_families, fast_scoring, scoring
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.protocol import ScoreRequest

from tests.eval.tiny_models import make_image, tiny_model_dir


def _requests(adapter: Any) -> list[ScoreRequest]:
    image = make_image(4)
    out = [
        ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), c)
        for a in ("red striped background", "a dog", "dark")
        for c in (" golden cat", " dog")
    ]
    mcq = adapter.render(prompts.mcq_prompt("What is it?", ["dog", "cat", "car", "tree"], "logprob"))
    return out + [ScoreRequest(image, mcq, letter) for letter in prompts.letter_continuations()]


def _spy_plain(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = scoring.score_plain

    def spy(adapter: Any, requests: Any) -> list[float]:
        calls.append(len(requests))
        return real(adapter, requests)

    monkeypatch.setattr(scoring, "score_plain", spy)
    return calls


def test_gemma3_fast_inside_the_window_plain_beyond_it(
    session_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = load_model(tiny_model_dir("gemma3", session_cache), batch_size=3)
    requests = _requests(adapter)
    expected = scoring.score_plain(adapter, requests)
    encoded = [fast_scoring.encode(adapter, r) for r in requests]
    longest = max(int(e.ids.shape[0]) for e in encoded)
    window = fast_families.sliding_window(adapter.model)
    assert window is not None and longest < window
    # Every image token (Gemma 3's bidirectional block) lies inside each group's shared prefix.
    plan = fast_scoring.plan_call(adapter.model, encoded, requests, batch_size=3)
    image_token = adapter.model.config.image_token_id
    for group in plan.groups:
        for index in group.members:
            ids = encoded[index].ids.tolist()
            assert max(i for i, t in enumerate(ids) if t == image_token) < group.prefix_len
    calls = _spy_plain(monkeypatch)
    assert fast_scoring.score_fast(adapter, requests) == pytest.approx(expected, abs=1e-4)
    assert calls == [] and adapter.scorer_used == "fast"
    # A window shorter than the longest request: that call is scored plain, and the reason is kept.
    monkeypatch.setattr(adapter.model.config.get_text_config(), "sliding_window", longest)
    assert adapter.score(requests) == pytest.approx(scoring.score_plain(adapter, requests), abs=1e-6)
    assert calls[0] == len(requests)
    reason = adapter.scorer_fallback_reason
    assert reason is not None and reason.startswith("some calls scored plain: ")
    assert fast_families.SLIDING_WINDOW in reason and f"window {longest}" in reason
    # ... and counted as such, so that the run's samples say plain for that chunk (a run that mixes
    # both is "mixed": tests/eval/test_scorer_check.py)
    assert adapter.scorer_tally.requests == {"plain": len(requests)}
    assert list(adapter.scorer_tally.reasons) == [
        f"{fast_families.SLIDING_WINDOW} ({longest} tokens, window {longest})"
    ]
    assert adapter.fast_path is not None  # the other calls stay on the fast scorer, checked as usual
