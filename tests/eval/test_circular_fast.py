"""The four rotations of an item share its image and question on the fast path, and score exactly
what the plain scorer gives each rotated prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval import prompts
from mmspubench.eval.backends.transformers import fast_scoring, scoring
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.protocol import ScoreRequest
from mmspubench.eval.views.confounds import metrics as metrics_confounds

from tests.eval.tiny_models import FAMILIES, make_image, tiny_model_dir

EXACT = [f for f in FAMILIES if f in fast_scoring.EXACT_FAMILIES]
OPTIONS = ("a red dog", "a golden cat", "a striped car", "a tall tree")


def _rotated_requests(adapter: Any, n_items: int, rotations: tuple[int, ...]) -> list[ScoreRequest]:
    out: list[ScoreRequest] = []
    for item in range(n_items):
        image = make_image(item + 1)
        for k in rotations:
            shown = metrics_confounds.rotated_options(OPTIONS, k)
            context = adapter.render(prompts.mcq_prompt(f"What is in image {item}?", shown, "logprob"))
            out.extend(ScoreRequest(image, context, c) for c in prompts.letter_continuations())
    return out


@pytest.mark.parametrize("family", EXACT)
def test_rotations_fast_equal_plain(family: str, session_cache: Path) -> None:
    adapter = load_model(tiny_model_dir(family, session_cache), batch_size=2, scorer="fast")
    requests = _rotated_requests(adapter, 2, metrics_confounds.ROTATIONS)
    plain = scoring.score_plain(adapter, requests)
    fast = fast_scoring.score_fast(adapter, requests)
    assert fast == pytest.approx(plain, abs=1e-4)


def test_rotations_share_the_prefix_and_equal_feeds(session_cache: Path) -> None:
    adapter = load_model(tiny_model_dir("llava", session_cache), batch_size=4, scorer="fast")
    requests = _rotated_requests(adapter, 1, metrics_confounds.ROTATIONS)
    encoded = [fast_scoring.encode(adapter, r) for r in requests]
    plan = fast_scoring.plan_call(adapter.model, encoded, requests, batch_size=4)
    assert len(plan.groups) == 1  # the image and question run once for all sixteen requests
    prefix = plan.groups[0].prefix_len
    # the four letters of a rotation share one feed: prefix + one feed per rotation, not sixteen
    feeds = [encoded[4 * k].ids.shape[0] - 1 - prefix for k in metrics_confounds.ROTATIONS]
    assert plan.processed_tokens == prefix + sum(feeds)
