"""A screenshot of the Space for the documentation: ``mmspubench space`` on real runs, in Chromium.

Started by ``bench/docs_figures.py`` (``make docs-figures``): the Space serves the bundled release
with the runs the script made as its results, Playwright drives Debian's Chromium (never a
downloaded browser) to the Explore tab, opens the first item and photographs the page.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
START_SECONDS = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(url: str, server: subprocess.Popen[bytes]) -> None:
    """Until the Space answers (it builds its app first), or fail if it exits."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"docs_figures: `mmspubench space` exited with {server.returncode} before serving")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    sys.exit(f"docs_figures: the Space did not answer at {url} within {START_SECONDS} s")


def screenshot(out: Path, runs: Path, work: Path) -> Path:
    """``out`` (a PNG): the Space's Explore tab with the first item open, the runs under ``runs``."""
    if not Path(CHROMIUM).exists():
        sys.exit("docs_figures: the Space screenshot needs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    port = _free_port()
    command = [sys.executable, "-m", "mmspubench.cli", "space", "--port", str(port), "--results", str(runs)]
    server = subprocess.Popen(command, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_for(url, server)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1700})
            page.goto(url, wait_until="load")
            page.wait_for_selector("#type-filter", timeout=60_000)
            first = page.locator("#items-table [data-testid=cell-0-0]")
            item_id = first.inner_text().strip()
            first.click()
            page.wait_for_function(
                f"() => document.querySelector('#item-markdown').innerText.includes('Item {item_id}')",
                timeout=60_000,
            )
            page.wait_for_timeout(1500)  # the picture and the chart settle
            page.screenshot(path=str(out), full_page=False)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return out
