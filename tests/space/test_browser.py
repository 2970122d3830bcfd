"""End to end in a real browser: Playwright driving Debian's Chromium (never a downloaded browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _cell(table: str, row: int, col: int) -> str:
    return f"#{table} [data-testid=cell-{row}-{col}]"


def test_explore_run_and_leaderboard_in_chromium(space_url: str, artifacts_dir: Path) -> None:
    # A missing browser fails loudly: CI installs Debian's chromium, and a skip would hide the check.
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: apt-get install -y chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        try:
            page.goto(space_url, wait_until="load")
            page.wait_for_selector("#type-filter", timeout=60_000)
            assert page.title() == "MM-SpuBench"
            grid = page.locator("#items-table [role=grid]")
            all_rows = grid.get_attribute("aria-rowcount")

            # Filter by one type: fewer rows, every one of that type.
            page.locator("#type-filter input").click()
            page.locator("ul[role=listbox] li", has_text="Background (BG)").click()
            page.keyboard.press("Escape")
            page.locator("h1").first.click()
            page.wait_for_function(
                f"() => document.querySelector('#items-table [role=grid]').getAttribute('aria-rowcount') !== '{all_rows}'",
                timeout=30_000,
            )
            assert int(grid.get_attribute("aria-rowcount") or 0) < int(all_rows or 0)
            assert "Background" in page.locator(_cell("items-table", 0, 2)).inner_text()

            # Open the first item by clicking its row.
            item_id = page.locator(_cell("items-table", 0, 0)).inner_text().strip()
            page.locator(_cell("items-table", 0, 0)).click()
            page.wait_for_function(
                f"() => document.querySelector('#item-markdown').innerText.includes('Item {item_id}')",
                timeout=30_000,
            )
            assert page.locator("#item-image img").count() == 1
            assert "✓" in page.locator("#item-options").inner_text()

            # Run the bundled model on it; the answer and the CGL chart appear.
            page.get_by_role("tab", name="Run").click()
            page.locator("#run-model").click()
            page.wait_for_function(
                "() => document.querySelector('#run-answer').innerText.includes('Answer:')", timeout=180_000
            )
            page.wait_for_selector(
                "#run-cgl-plot .vega-embed svg, #run-cgl-plot .vega-embed canvas", timeout=30_000
            )
            assert "CGLA_min" in page.locator("#run-cgla-text").inner_text()
            page.screenshot(path=str(artifacts_dir / "space-run.png"), full_page=True)

            # Sort the leaderboard: descending Average puts model-a first, ascending model-b.
            page.get_by_role("tab", name="Leaderboard").click()
            first = page.locator(_cell("board-table", 0, 0))
            assert first.inner_text().strip() == "org/model-a"
            page.locator("#board-ascending input").check()
            page.wait_for_function(
                "() => document.querySelector('#board-table [data-testid=cell-0-0]').innerText.trim() === 'org/model-b'",
                timeout=30_000,
            )
            shot = artifacts_dir / "space-leaderboard.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        except Exception:
            page.screenshot(path=str(artifacts_dir / "space-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
