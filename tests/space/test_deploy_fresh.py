"""The built Space as the Hub builds it: a fresh venv, torch then requirements.txt, ``python app.py``.

Nothing of this checkout is on the path: the venv is new, the working directory is the built
folder, and the app imports the vendored ``mmspubench/``. All four tabs are driven in Chromium.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.slow

TORCH = [
    "torch==2.13.0",
    *(["--index-url", os.environ["TORCH_INDEX"]] if os.environ.get("TORCH_INDEX") else []),
]
"""torch first, as the README says; ``TORCH_INDEX`` (the Makefile's variable) names the CPU build's
index where the machine's pip configuration does not already provide that build."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _clean_env(home: Path) -> dict[str, str]:
    """An environment with nothing of this checkout: no PYTHONPATH, no venv, a fresh HF home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "MMSPUBENCH_"))}
    env.update(
        HF_HOME=str(home / "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1"
    )
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", GRADIO_ANALYTICS_ENABLED="False")
    return env


def _pip(venv: Path, args: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def fresh_space(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    import mmspubench
    from mmspubench.space.deploy import SpaceSettings, build_space

    root = tmp_path_factory.mktemp("fresh")
    runs = root / "runs"
    # A real results run of the bundled model on the first items (for the leaderboard and Explore's CGLA).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HOME", str(root / "hf-build"))
        mmspubench.evaluate(limit=3, out=runs / "bundled", progress=False)
    space = root / "space"
    build_space(space, SpaceSettings(results=str(runs), revision="0" * 40))
    env = _clean_env(root)
    env["MMSPUBENCH_SPACE_MODELS"] = ""  # the bundled model only: nothing is downloaded
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    _pip(venv, TORCH, space, env)
    _pip(venv, ["-r", "requirements.txt"], space, env)
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import mmspubench; print(mmspubench.__file__)"],
        cwd=space,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).resolve() == (space / "mmspubench" / "__init__.py").resolve(), where
    port = _free_port()
    env.update(GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port))
    log = (root / "app.log").open("w")
    app = subprocess.Popen(
        [str(venv / "bin" / "python"), "app.py"], cwd=space, env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            assert app.poll() is None, (root / "app.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(url, timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the Space did not answer within 10 minutes"
                time.sleep(2)
        yield url, runs / "bundled"
    finally:
        app.terminate()
        app.wait(timeout=60)
        log.close()


def _shot(page: object, folder: Path, name: str, full_page: bool = True) -> Path:
    from PIL import Image, ImageStat

    path = folder / name
    page.screenshot(path=str(path), full_page=full_page)  # type: ignore[attr-defined]
    with Image.open(path) as image:
        spread = ImageStat.Stat(image.convert("L")).stddev[0]
    assert path.stat().st_size > 20_000 and spread > 10, f"{name}: the page looks blank"
    return path


def test_built_space_in_a_fresh_venv_in_chromium(fresh_space: tuple[str, Path], artifacts_dir: Path) -> None:
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: apt-get install -y chromium"
    from playwright.sync_api import sync_playwright

    url, run = fresh_space
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        try:
            page.goto(url, wait_until="load")
            page.wait_for_selector("#type-filter", timeout=120_000)
            # Explore: the first item is open, and the results run's CGLA chart shows without a click.
            assert "Item" in page.locator("#item-markdown").inner_text()
            page.wait_for_selector("#explore-cgl-plot img")
            assert "CGLA_min" in page.locator("#explore-cgla-text").inner_text()
            _shot(page, artifacts_dir, "fresh-explore.png")

            # Run: the item it will run on is shown; the live run answers.
            page.get_by_role("tab", name="Run").click()
            assert page.locator("#run-item-image img").count() == 1
            assert "Question" in page.locator("#run-item-text").inner_text()
            page.locator("#run-model").click()
            page.wait_for_function(
                "() => document.querySelector('#run-answer').innerText.includes('Answer:')", timeout=300_000
            )
            assert "CGLA_min" in page.locator("#run-cgla-text").inner_text()
            _shot(page, artifacts_dir, "fresh-run.png")

            # Leaderboard: the results run, its figures' source, the offline note.
            page.get_by_role("tab", name="Leaderboard").click()
            board = page.locator("#board-table").inner_text()
            assert "results dataset" in board
            assert "offline" in page.locator("#board-note").inner_text()
            _shot(page, artifacts_dir, "fresh-leaderboard.png")

            # Submit: a local-dataset run is refused in one line on the page.
            page.get_by_role("tab", name="Submit").click()
            page.locator("#submit-results input[type=file]").set_input_files(str(run / "results.json"))
            page.locator("#submit-samples input[type=file]").set_input_files(str(run / "samples.jsonl"))
            page.locator("#submit-repo textarea, #submit-repo input").first.fill("org/model")
            page.locator("#submit-validate").click()
            message = page.wait_for_selector("text=not the published dataset", timeout=60_000)
            assert message is not None
            message.screenshot(path=str(artifacts_dir / "fresh-submit-error.png"))
            # The viewport, where the error toast (fixed at the top right) is drawn.
            _shot(page, artifacts_dir, "fresh-submit.png", full_page=False)
        except Exception:
            page.screenshot(path=str(artifacts_dir / "fresh-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
