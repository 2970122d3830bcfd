"""``--backend openai``'s text-only path (the blind view, ``--blind-image none``) against the
stand-in server: the exact request bodies (no image part), the scores, the cache waves.

The figures against a real vLLM server, equal to transformers: ``test_vllm_equality.py`` (slow).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the api extra (openai) is not installed")

from mmspubench.eval.backends.openai.messages import ImageUrls, render_messages
from mmspubench.eval.cli import main
from mmspubench.eval.protocol import ChatPrompt, ScoreRequest
from PIL import Image

from tests.eval.standin_server import StandInServer, toy_logprob

LIMIT = 6


def _eval(server: StandInServer, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model",
        "--limit", str(LIMIT), "--out", str(out), "--no-progress", "--api-key-env", "none", *more,
    ]  # fmt: skip


def _samples(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _has_image(body: dict[str, Any]) -> bool:
    return any(
        part.get("type") in ("image", "image_url")
        for message in body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
    )


def _is_item(body: dict[str, Any]) -> bool:
    """A request about an item (the probes' user text is ``probe`` or a plain string)."""
    users = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
    texts = [p.get("text", "") for c in users if isinstance(c, list) for p in c]
    return any("Answer with" in t for t in texts)


def _without_image(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the image part of its user message taken out."""
    out = copy.deepcopy(body)
    for message in out["messages"]:
        if isinstance(message["content"], list):
            message["content"] = [p for p in message["content"] if p["type"] != "image_url"]
    return out


def test_render_text_is_the_chat_without_the_image_part() -> None:
    prompt = ChatPrompt("sys", "question", "Answer:")
    assert json.loads(render_messages(prompt, image=False)) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "question"}]},
        {"role": "assistant", "content": "Answer:"},
    ]
    with_image = json.loads(render_messages(prompt))
    with_image[1]["content"] = with_image[1]["content"][1:]
    assert with_image == json.loads(render_messages(prompt, image=False))


def test_blind_generate_requests_are_the_image_requests_without_the_image(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandInServer(answer="B") as server:
        assert main(_eval(server, out, "--metrics", "accuracy,blind")) == 0
    chats = [r["body"] for r in server.chat_requests()]
    seen = [b for b in chats if _has_image(b)]
    blind = [b for b in chats if not _has_image(b)]
    assert len(seen) == LIMIT and len(blind) == LIMIT
    # the exact body: the same model, messages, sampling and extras, only the image part gone
    assert sorted(map(json.dumps, blind)) == sorted(json.dumps(_without_image(b)) for b in seen)
    for body in blind:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert [p["type"] for p in body["messages"][1]["content"]] == ["text"]
        assert "image_url" not in json.dumps(body)
    results = json.loads((out / "results.json").read_text())
    samples = _samples(out)
    assert all(s["blind"]["prediction"] == "B" for s in samples)
    share_b = 100 * sum(s["answer"] == "B" for s in samples) / LIMIT
    assert results["blind"]["accuracy"] == pytest.approx(share_b) and results["blind"]["image"] == "none"
    assert results["blind"]["gain"] == pytest.approx(0.0)  # it answers B with and without the image


@pytest.mark.parametrize("scoring", ["vllm", "prefix_cache"])
def test_blind_letters_are_scored_without_an_image(tmp_path: Path, scoring: str) -> None:
    out = tmp_path / "run"
    with StandInServer(scoring=scoring) as server:
        argv = _eval(server, out, "--metrics", "accuracy,circular,blind", "--answer-mode", "logprob")
        assert main(argv) == 0
    items = [r for r in server.log if _is_item(r["body"])]  # not the probes
    first_pass = [r["body"] for r in items if "prompt_logprobs" in r["body"]]
    first_pass = [b for b in first_pass if b.get("skip_reading_prefix_cache") is not True]
    tokenized = [r["body"] for r in items if r["path"].endswith("/tokenize")]
    blind = [b for b in first_pass if not _has_image(b)]
    assert len(blind) == 4 * LIMIT  # four letters per item, 16 with the image (rotations)
    assert len(first_pass) - len(blind) == 16 * LIMIT
    # each context once, each letter; the prefix-cache run's check scores its first item afresh once more
    checked = 5 if scoring == "prefix_cache" else 0
    assert sum(not _has_image(b) for b in tokenized) == 5 * LIMIT + checked
    check = json.loads((out / "results.json").read_text())["model"]["scorer_check"]
    if scoring == "prefix_cache":
        assert check["path"] == "the server's prefix-cache scoring" and check["items"] == 1
        assert check["conditions"] == 20 and check["max_abs_diff"] == 0.0  # 16 with the image, 4 blind
    else:
        assert check is None  # nothing read from a cache: nothing to check
    letters = [b["messages"][-1]["content"][-2:] for b in blind]
    assert sorted(letters) == sorted([" A", " B", " C", " D"] * LIMIT)
    want = [sum(toy_logprob(ord(ch) + 100) for ch in letter) for letter in (" A", " B", " C", " D")]
    for sample in _samples(out):
        assert sample["blind"]["option_scores"] == pytest.approx(want)  # exactly the letter's tokens
        for rotation in sample["rotations"]:
            assert rotation["option_scores"] == pytest.approx(want)
    cache = json.loads((out / "results.json").read_text())["backend"]["prefix_cache"]
    assert cache["requests"] == 20 * LIMIT
    if scoring == "prefix_cache":  # the rotations and the blind letters read the first ones' blocks
        assert cache["read"] and cache["cached_prompt_tokens"] > 0
        assert all(b.get("skip_reading_prefix_cache") is False for b in blind)


def test_cache_waves_key_text_only_requests_by_their_context() -> None:
    image = Image.new("RGB", (4, 4))
    requests = [
        ScoreRequest(image, "[1]", " A"),
        ScoreRequest(image, "[2]", " A"),  # another rotation of the same image: its group
        ScoreRequest(None, "[3]", " A"),  # text-only
        ScoreRequest(None, "[3]", " B"),
        ScoreRequest(None, "[4]", " A"),  # another question, another group
    ]
    urls = ImageUrls([r.image for r in requests])
    keys = [urls.wave_key(r) for r in requests]
    assert keys[0] == keys[1] and keys[0][0] == "image"
    assert keys[2] == keys[3] == ("text", "[3]") and keys[4] == ("text", "[4]")
