"""The whole pipeline: select (tiny CLIP) -> annotate (tiny LLaVA) -> review by two annotators at
once in Debian's Chromium -> export -> build -> eval."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pytest
from mmspubench.cli import main

from ..eval.tiny_models import tiny_model_dir
from ..space.test_browser import CHROMIUM, CHROMIUM_ARGS
from .fixtures import select_argv

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def draft(
    tiny_clip: Path, image_tree: Path, session_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    work = tmp_path_factory.mktemp("pipeline")
    assert main(select_argv(image_tree, tiny_clip, work / "cand", "--k", "3", "--l", "4")) == 0
    lines = (work / "cand" / "candidates.jsonl").read_text().splitlines(keepends=True)
    (work / "cand" / "candidates.jsonl").write_text("".join(lines[:3]))  # a tiny LLaVA writes slowly
    model = tiny_model_dir("llava", session_cache)
    annotate = ["curate", "annotate", "--candidates", str(work / "cand"), "--backend", "transformers"]
    assert main([*annotate, "--model", str(model), "--out", str(work / "draft")]) == 0
    assert len(json.loads((work / "draft" / "annotation.json").read_text())) == 3
    return work / "draft"


@pytest.fixture
def review_url(draft: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    from mmspubench.curate.review_app import build_review_app
    from mmspubench.curate.review_handlers import start

    db = tmp_path / "reviews.sqlite"
    app = build_review_app(start(draft, db), db)
    app.queue(default_concurrency_limit=8).launch(
        server_name="127.0.0.1", server_port=_free_port(), prevent_thread_lock=True, quiet=True
    )
    try:
        yield str(app.local_url).rstrip("/"), db
    finally:
        app.close()


def _current_item(page: Any) -> str:
    page.wait_for_function("() => /Item\\s+\\S+/.test(document.querySelector('#review-item').innerText)")
    match = re.search(r"Item\s+(\S+)", page.locator("#review-item").inner_text())
    assert match
    return match.group(1)


def _review(page: Any, rating: str, decision: str, question: str | None = None) -> str:
    item = _current_item(page)
    if question is not None:
        page.locator("#edit-question textarea").fill(question)
    page.locator("#rating label", has_text=rating).click()
    page.locator("#decision label", has_text=decision).click()
    page.locator("#comment textarea").fill(f"{decision} by rating {rating}")
    page.locator("#submit").click()
    page.wait_for_function(
        f"() => document.querySelector('#status').innerText.includes('of item {item}')", timeout=30_000
    )
    return item


def test_two_annotators_review_at_once_then_export_build_eval(
    review_url: tuple[str, Path], draft: Path, tmp_path: Path, artifacts_dir: Path
) -> None:
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: apt-get install -y chromium"
    from playwright.sync_api import sync_playwright

    url, db = review_url
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = [browser.new_context().new_page() for _ in range(2)]
        try:
            for page, name in zip(pages, ("alice", "bob"), strict=True):
                page.goto(url, wait_until="load")
                page.wait_for_selector("#annotator", timeout=60_000)
                page.locator("#annotator textarea, #annotator input").first.fill(name)
                page.locator("#start").click()
            alice, bob = pages
            # Interleaved: both have the same item open; an invalid edit is refused on the spot.
            first = _current_item(alice)
            assert _current_item(bob) == first
            bob.locator("#edit-core textarea").fill("")
            bob.locator("#rating label", has_text="3").click()
            bob.locator("#decision label", has_text="accept").click()
            bob.locator("#submit").click()
            bob.wait_for_selector("text=core_attributes", timeout=30_000)
            bob.reload()
            bob.locator("#annotator textarea, #annotator input").first.fill("bob")
            bob.locator("#start").click()
            assert _review(alice, "5", "accept", question="Which object is on the left?") == first
            assert _review(bob, "4", "accept") == first
            second = _review(alice, "2", "reject")
            assert _review(bob, "2", "reject") == second
            third = _review(bob, "5", "accept")
            assert _review(alice, "4", "accept") == third
            for page in pages:
                page.wait_for_function(
                    "() => document.querySelector('#review-item').innerText.includes('All items reviewed')"
                )
                assert "3 of 3 items reviewed" in page.locator("#progress").inner_text()
            alice.screenshot(path=str(artifacts_dir / "curate-review.png"), full_page=True)
        except Exception:
            for i, page in enumerate(pages):
                page.screenshot(path=str(artifacts_dir / f"curate-review-failure-{i}.png"), full_page=True)
            raise
        finally:
            browser.close()

    raw, repo, runs = tmp_path / "raw", tmp_path / "repo", tmp_path / "runs"
    export = ["curate", "export", "--draft", str(draft), "--db", str(db), "--min-annotators", "2"]
    assert main([*export, "--min-mean-rating", "3", "--out", str(raw)]) == 0
    records = json.loads((raw / "annotation.json").read_text())
    assert [r["id"] for r in records] == [first, third]
    assert records[0]["question"] == "Which object is on the left?"
    report = json.loads((raw / "agreement.json").read_text())
    assert report["reviews"] == 6 and report["annotators"] == ["alice", "bob"]
    assert main(["build", "--source", str(raw), "--out", str(repo)]) == 0
    assert datasets.load_dataset(str(repo), split="test").num_rows == 2
    assert main(["eval", "--dataset", str(repo), "--out", str(runs), "--no-progress"]) == 0
    results = json.loads((runs / "results.json").read_text())
    assert results["dataset"]["n"] == 2 and results["accuracy"]["n"] == 2
