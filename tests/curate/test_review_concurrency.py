"""Twenty annotators at once against the real review app (launched in-process on localhost).

Each client calls the app's ``start`` endpoint three times and downloads the image it is given:
all 60 requests succeed and every download is the draft's own image file, byte for byte. (The app
used to hand Gradio a decoded image, which Gradio re-encoded and rewrote in place in its cache on
every request while other requests were serving the same file: "Too much/little data for
declared Content-Length".)
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.curate import review_handlers as h
from PIL import Image

CLIENTS, REQUESTS = 20, 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def big_draft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two items whose images are 768x768 noise (large files: a rewrite takes long enough to be seen)."""
    out = tmp_path_factory.mktemp("concurrent") / "draft"
    assert main(["synth", "--out", str(out), "--n", "2", "--seed", "5"]) == 0
    rng = np.random.default_rng(0)
    for path in sorted((out / "data" / "images").iterdir()):
        Image.fromarray(rng.integers(0, 256, size=(768, 768, 3), dtype=np.uint8)).save(path)
    return out


@pytest.fixture
def review_url(big_draft: Path, tmp_path: Path) -> Iterator[str]:
    from mmspubench.curate.review_app import build_review_app, serve

    db = tmp_path / "reviews.sqlite"
    draft = h.start(big_draft, db)
    app = serve(build_review_app(draft, db), draft, host="127.0.0.1", port=_free_port(), block=False)
    try:
        yield str(app.local_url).rstrip("/")
    finally:
        app.close()


def _start(client: httpx.Client, url: str, name: str) -> list[Any]:
    """One call of the ``start`` endpoint (Gradio's HTTP API); returns its outputs."""
    event = client.post(f"{url}/gradio_api/call/start", json={"data": [name]})
    event.raise_for_status()
    stream = client.get(f"{url}/gradio_api/call/start/{event.json()['event_id']}")
    stream.raise_for_status()
    lines = stream.text.splitlines()
    assert "event: complete" in lines, stream.text
    data: list[Any] = json.loads(lines[lines.index("event: complete") + 1].removeprefix("data: "))
    return data


def _annotator(url: str, k: int) -> list[bytes]:
    downloads = []
    with httpx.Client(timeout=120) as client:
        for _ in range(REQUESTS):
            image = _start(client, url, f"annotator {k}")[1]  # [0] is the item id (a State)
            response = client.get(image["url"])
            response.raise_for_status()
            assert int(response.headers["content-length"]) == len(response.content)
            downloads.append(response.content)
    return downloads


def test_twenty_annotators_at_once_all_get_the_whole_image(big_draft: Path, review_url: str) -> None:
    first = h.load_draft(big_draft).records[0]
    expected = Path(str(first.image)).read_bytes()
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(lambda k: _annotator(review_url, k), range(CLIENTS)))
    downloads = [d for per_client in results for d in per_client]
    assert len(downloads) == CLIENTS * REQUESTS
    assert all(d == expected for d in downloads)  # the draft's file itself, never a re-encoded copy
