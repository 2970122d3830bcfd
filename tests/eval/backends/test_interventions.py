"""The engines under the interventions view: each changed image is what is sent, keyed by content.

Prefix-cache groups and data URLs key an image by its pixels (``ImageKeys``), never by the object:
an intervened image one pixel away from the published one never shares the published one's cache
group, URL or answer, while the same pixels in two objects share one. Against the stand-in server
(tests/eval/standin_server.py), every data URI a run sends is decoded and its digest compared with
the sample's recorded ``interventions`` digests. The real vLLM engine and server:
test_vllm_equality.py (slow).
"""

from __future__ import annotations

import base64
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.eval import interventions, prompts
from mmspubench.eval.backends.vllm.engine import request_keys
from mmspubench.eval.checkpoint.encoding import ImageKeys
from mmspubench.eval.protocol import ScoreRequest
from PIL import Image

IMG = 3


def _picture(seed: int = 0) -> Image.Image:
    return Image.frombytes("RGB", (6, 5), bytes((seed + 7 * k) % 256 for k in range(6 * 5 * 3)))


def _one_pixel_off(image: Image.Image) -> Image.Image:
    other = image.copy()
    r, g, b = image.tobytes()[:3]
    other.putpixel((0, 0), (r ^ 1, g, b))
    return other


def test_image_keys_are_the_content() -> None:
    keys = ImageKeys()
    image = _picture()
    assert keys.key(image) == keys.key(image.copy())  # same pixels, another object: one key
    assert keys.key(_one_pixel_off(image)) != keys.key(image)
    gray, _ = interventions.apply("grayscale", image)
    assert keys.key(gray) != keys.key(image)
    data = image.tobytes()
    turned = Image.frombytes("RGB", (5, 6), data)  # the same bytes at another size
    as_gray = Image.frombytes("L", (18, 5), data)  # and in another mode
    assert len({keys.key(image), keys.key(turned), keys.key(as_gray)}) == 3


def test_palette_images_with_the_same_indices_but_other_colours_get_other_keys() -> None:
    """A palette image's bytes are its indices: the palette says what is shown."""
    first = Image.new("P", (4, 4), 0)
    first.putpalette([255, 0, 0] + [0, 0, 0] * 255)
    second = first.copy()
    second.putpalette([0, 0, 255] + [0, 0, 0] * 255)
    assert first.tobytes() == second.tobytes()
    assert first.convert("RGB").tobytes() != second.convert("RGB").tobytes()
    keys = ImageKeys()
    assert keys.key(first) != keys.key(second)
    assert keys.key(first) == keys.key(first.copy())


def test_vllm_groups_an_intervened_image_apart_from_the_published_one() -> None:
    image = _picture()
    shown = [image, image.copy(), _one_pixel_off(image), interventions.apply("grayscale", image)[0]]
    ids = [1, 10, IMG, 11, 12, 30]
    requests = [ScoreRequest(i, "ctx", " A") for i in shown]
    keys = request_keys(requests, [(ids, 5)] * len(requests), IMG)
    assert keys[0] == keys[1]  # the same pixels in another object read the same blocks
    assert len({keys[0], keys[2], keys[3]}) == 3
    text = request_keys([ScoreRequest(None, "ctx", " A")], [([1, 10, 11, 30], 3)], IMG)
    assert text[0][0] is None and text[0] not in keys


def test_image_urls_encode_each_picture_once_and_keep_one_pixel_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mmspubench.eval.backends.openai import messages as openai_messages

    encoded: list[str] = []
    real = openai_messages.data_url

    def counting(image: Image.Image) -> str:
        encoded.append(interventions.pixel_digest(image))
        return real(image)

    monkeypatch.setattr(openai_messages, "data_url", counting)
    image = _picture()
    other = _one_pixel_off(image)
    images = [image] * 4 + [image.copy()] * 4 + [other] * 4 + [None]
    urls = openai_messages.ImageUrls(images)
    assert len(encoded) == 2  # one PNG per distinct picture, not one per request
    assert urls.url(image) == urls.url(image.copy()) != urls.url(other)
    assert urls.url(None) is None
    assert _decoded_digest(urls.url(other) or "") == interventions.pixel_digest(other)
    waves = [urls.wave_key(ScoreRequest(i, "[1]", " A")) for i in (image, other)]
    assert waves[0] != waves[1]


def _decoded_digest(url: str) -> str:
    head, data = url.split(",", 1)
    assert head == "data:image/png;base64"
    with Image.open(io.BytesIO(base64.b64decode(data))) as shown:
        return interventions.pixel_digest(interventions.to_rgb(shown))


pytest.importorskip("openai", reason="the api extra (openai) is not installed")

from mmspubench.eval.cli import main  # noqa: E402

from tests.eval.standin_server import StandInServer, image_urls, toy_logprob  # noqa: E402

NAMES = "grayscale,blur,noise"
LETTER_SCORES = [sum(toy_logprob(ord(c) + 100) for c in letter) for letter in prompts.letter_continuations()]
"""The toy server's score of each option letter's continuation (one token per character)."""


def _eval(server: StandInServer, out: Path, *more: str) -> list[str]:
    return [
        "eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model",
        "--limit", "4", "--out", str(out), "--no-progress", "--api-key-env", "none",
        "--metrics", "accuracy,interventions", "--interventions", NAMES, *more,
    ]  # fmt: skip


def _samples(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _question(body: dict[str, Any]) -> str:
    user = next(m for m in body["messages"] if m["role"] == "user")
    return str(next(p["text"] for p in user["content"] if p["type"] == "text"))


def _gray(body: dict[str, Any]) -> bool:
    (url,) = image_urls(body)
    _, data = url.split(",", 1)
    with Image.open(io.BytesIO(base64.b64decode(data))) as shown:
        pixels = np.asarray(interventions.to_rgb(shown))
        return bool((pixels == pixels[..., :1]).all())


def _sent_digests(server: StandInServer) -> dict[str, list[str]]:
    """The digest of every image each question was sent with, by question text."""
    sent: dict[str, list[str]] = defaultdict(list)
    for request in server.chat_requests():
        urls = image_urls(request["body"])
        if urls and _question(request["body"]) != "probe":  # not the start-up probe's picture
            sent[_question(request["body"])] += [_decoded_digest(u) for u in urls]
    return sent


def test_generate_sends_each_intervened_image_and_reads_its_own_answer(tmp_path: Path) -> None:
    """The server answers A to a gray picture, B to any other: the grayscale entries are A, the
    published answers and the other interventions B, and each question went out with exactly the
    published image and the recorded intervened ones (decoded on the server side)."""
    out = tmp_path / "run"
    with StandInServer(answer_of=lambda body: "A" if _gray(body) else "B") as server:
        assert main(_eval(server, out)) == 0
        sent = _sent_digests(server)
    samples = _samples(out)
    assert len(samples) == 4 and len(sent) == 4
    for sample in samples:
        entries = sample["interventions"]
        assert [e["name"] for e in entries] == NAMES.split(",")
        assert sample["prediction"] == "B"
        assert {e["name"]: e["prediction"] for e in entries} == {"grayscale": "A", "blur": "B", "noise": "B"}
        (digests,) = [d for d in sent.values() if set(d) >= {e["digest"] for e in entries}]
        assert len(digests) == 4 and len(set(digests)) == 4  # published + 3, each sent once
        (published,) = set(digests) - {e["digest"] for e in entries}
        assert published not in {e["digest"] for e in entries}


def test_logprob_scores_of_intervened_images_read_no_block_of_the_published_image(tmp_path: Path) -> None:
    """A server caching by image content (as vLLM does): the intervened images' letters are scored
    exactly (garbage from the cache is never summed), each picture sent with its four letters."""
    out = tmp_path / "run"
    with StandInServer(scoring="prefix_cache") as server:
        assert main(_eval(server, out, "--answer-mode", "logprob")) == 0
        sent = _sent_digests(server)
    samples = _samples(out)
    for sample in samples:
        for scores in [sample["option_scores"], *(e["option_scores"] for e in sample["interventions"])]:
            assert scores == pytest.approx(LETTER_SCORES)
    for sample in samples:
        (digests,) = [d for d in sent.values() if {e["digest"] for e in sample["interventions"]} <= set(d)]
        assert len(set(digests)) == 4  # 4 letters x (published + 3), 4 distinct pictures
    cache = json.loads((out / "results.json").read_text())["backend"]["prefix_cache"]
    assert cache["read"] and cache["cached_prompt_tokens"] > 0
