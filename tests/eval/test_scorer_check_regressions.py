"""The fast scorer under stand-in library regressions: the run stops, it never writes wrong CGLs.

Two regressions a transformers or torch release could bring, made here by patching the libraries:
scaled-dot-product attention that drops an explicit 4-D mask when the queries continue a cache
(which only the fast scorer's packed suffix pass does), and an output head the fast scorer does
not reproduce (the way transformers 5.25 made Aya Vision's forward scale its logits).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from mmspubench.eval.backends.transformers import output_head
from mmspubench.eval.cli import main


def _eval(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["eval", "--limit", "3", "--no-progress", *argv])
    return code, err.getvalue().strip()


def _cgls(run: Path) -> list[float]:
    lines = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    return [c["cgl"] for line in lines for c in line["conditions"]]


@pytest.fixture
def cache_mask_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """SDPA that ignores an explicit mask whenever there are fewer queries than keys."""
    real = torch.nn.functional.scaled_dot_product_attention

    def regressed(query: Any, key: Any, value: Any, attn_mask: Any = None, *args: Any, **kwargs: Any) -> Any:
        if attn_mask is not None and query.shape[-2] < key.shape[-2]:
            attn_mask = None
        return real(query, key, value, attn_mask, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", regressed)


def test_the_regression_is_real_and_the_plain_scorer_is_immune(
    tmp_path: Path, cache_mask_dropped: None
) -> None:
    """Without the check the fast scorer writes CGLs nats off; the plain scorer is unaffected."""
    code, err = _eval("--scorer", "fast", "--scorer-check", "0", "--out", str(tmp_path / "unchecked"))
    assert code == 0, err
    code, err = _eval("--scorer", "plain", "--out", str(tmp_path / "plain"))
    assert code == 0, err
    results = json.loads((tmp_path / "unchecked" / "results.json").read_text())
    assert results["model"]["scorer_check"]["items"] == 0  # the run says it was not checked
    diff = max(
        abs(a - b) for a, b in zip(_cgls(tmp_path / "unchecked"), _cgls(tmp_path / "plain"), strict=True)
    )
    assert diff > 0.1


def test_a_fast_run_under_the_regression_stops_and_writes_nothing(
    tmp_path: Path, cache_mask_dropped: None
) -> None:
    code, err = _eval("--scorer", "fast", "--out", str(tmp_path / "run"))
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("mmspubench eval: error: the fast scorer disagrees with the plain computation for ")
    assert "(family llava): item '000000', CGL of condition " in err
    assert "Rerun with --scorer plain" in err and "torch 2." in err and "transformers 5." in err
    assert not (tmp_path / "run").exists()


def test_a_head_the_forward_does_not_apply_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A head probe gone wrong (a logit scale the forward does not apply) stops the run too."""
    wrong = output_head.OutputHead(
        "scaled", lambda model, hidden: model.get_output_embeddings()(hidden) * 0.5
    )
    monkeypatch.setattr(output_head, "probe_head", lambda model, tokenizer: wrong)
    code, err = _eval("--scorer", "fast", "--out", str(tmp_path / "run"))
    assert code == 2 and "the fast scorer disagrees with the plain computation" in err, err
    assert not (tmp_path / "run").exists()


def test_a_forward_whose_head_no_known_head_gives_is_scored_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import LlavaForConditionalGeneration

    real = LlavaForConditionalGeneration.forward

    @functools.wraps(real)  # generate reads the forward's signature
    def cubed(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        out.logits = out.logits * 3.0
        return out

    monkeypatch.setattr(LlavaForConditionalGeneration, "forward", cubed)
    code, err = _eval("--scorer", "fast", "--out", str(tmp_path / "run"))
    assert code == 0, err
    model = json.loads((tmp_path / "run" / "results.json").read_text())["model"]
    assert model["scorer_used"] == "plain"
    assert output_head.HEAD_NOT_REPRODUCED in model["scorer_fallback_reason"]
    assert model["scorer_check"] is None  # no fast path ran, nothing to check


def test_the_probe_finds_the_head_the_forward_applies(session_cache: Path) -> None:
    """On every family the matrix serves fast, the probed head gives the forward's logits; a text
    config with a logit scale the forward applies is found as such."""
    from mmspubench.eval.backends.transformers.loading import load_model

    from tests.eval.tiny_models import tiny_model_dir

    adapter = load_model(tiny_model_dir("llava", session_cache), scorer="fast")
    head = adapter.output_head
    assert head is not None and head.name == "embeddings"
    text = adapter.model.config.get_text_config()
    real = type(adapter.model).forward

    def scaled(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        out.logits = out.logits * 0.25
        return out

    text.logit_scale = 0.25
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(type(adapter.model), "forward", scaled)
            found = output_head.probe_head(adapter.model, adapter.processor.tokenizer)
    finally:
        del text.logit_scale
    assert found is not None and found.name == "logit_scale"
