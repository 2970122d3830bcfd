"""End to end in a real browser: Playwright driving Debian's Chromium (never a downloaded browser)."""

from __future__ import annotations

import re
from collections.abc import Iterator
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
            page.wait_for_selector("#run-cgl-plot img", timeout=30_000)
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


@pytest.fixture(scope="module")
def five_runs_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two models, five runs (standard, core-focus, ceiling of one; standard, core-focus of the other)."""
    from mmspubench.space.handlers import SpaceConfig, load_state
    from mmspubench.space.layout import build_app

    from tests.eval.submit.test_submit import make_run

    from .local_app import launch_local

    runs = tmp_path_factory.mktemp("five")
    for model, variants in (
        ("org/a", ("standard", "core-focus", "attribute-hint")),
        ("org/b", ("standard", "core-focus")),
    ):
        for variant in variants:
            make_run(runs / f"{model[-1]}-{variant}", model_id=model, prompt_variant=variant)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "hf_home"))
        env.setenv("HF_HUB_OFFLINE", "1")
        state = load_state(SpaceConfig(results=str(runs), hub_models=()))
        assert len(state.series) == 5
        demo = build_app(state=state)
        url = launch_local(demo)
        try:
            yield url
        finally:
            demo.close()


def test_leaderboard_rows_are_the_chart_runs_fit_the_frame_and_no_vega_warning(
    five_runs_url: str, artifacts_dir: Path
) -> None:
    from playwright.sync_api import sync_playwright

    console: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1800})
        page.on("console", lambda m: console.append(m.text))
        try:
            page.goto(five_runs_url, wait_until="load")
            page.wait_for_selector("#type-filter", timeout=60_000)
            page.get_by_role("tab", name="Leaderboard").click()
            page.wait_for_selector("#board-plot img", timeout=30_000)
            rows = int(page.locator("#board-table [role=grid]").get_attribute("aria-rowcount") or 0) - 1
            assert rows == 5  # = the chart's runs (state.series above)
            cells = [
                page.locator(_cell("board-table", r, c)).inner_text().strip()
                for r in range(5)
                for c in range(1, 13)
            ]
            odd = [cell for cell in cells if cell and not re.fullmatch(r"\d+\.\d\d", cell)]
            assert cells and not odd, odd  # one format: 50.00 beside 38.89
            widths = page.evaluate(
                "() => { const v = document.querySelector('#board-table .virtual-table-viewport');"
                " return [v.scrollWidth, v.clientWidth]; }"
            )
            assert widths[0] <= widths[1], widths  # not cut on the right
            page.screenshot(path=str(artifacts_dir / "space-five-runs.png"), full_page=True)
            page.get_by_role("tab", name="Submit").click()
            page.locator("#submit-validate").click()
            page.wait_for_function(
                "() => document.querySelector('#submit-verdict').innerText.includes('Not valid')",
                timeout=30_000,
            )
            page.wait_for_timeout(6_000)  # longer than a toast lasts: the reason stays on the page
            assert (
                "upload both results.json and samples.jsonl" in page.locator("#submit-verdict").inner_text()
            )
        finally:
            browser.close()
    assert not [m for m in console if "Vega" in m or m.startswith("WARN")], console


WRAP_CHECK = """([numeric, maxWord]) => {
  const table = document.querySelector('#board-table');
  const lines = (node, start, end) => {
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, end);
    return new Set([...range.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top))).size;
  };
  const broken = [];
  const words = (el, where) => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/\\S+/g)) {
        let start = m.index;
        for (const piece of m[0].split(/(?<=-)(?=\\p{L})/u)) {
          if (piece.length <= maxWord && lines(node, start, start + piece.length) > 1) broken.push(where + ': ' + piece);
          start += piece.length;
        }
      }
    }
  };
  const heads = [...table.querySelectorAll('th[data-testid^=header-]')];
  const names = heads.map(th => th.getAttribute('title'));
  heads.forEach((th, i) => words(th.querySelector('.header-content'), 'header ' + names[i]));
  const cells = [...table.querySelectorAll('[data-testid^=cell-]')];
  for (const cell of cells) {
    const name = names[Number(cell.getAttribute('data-col'))];
    const wrap = cell.querySelector('.cell-wrap');
    if (!numeric.includes(name)) { words(wrap, name + ' cell'); continue; }
    const walker = document.createTreeWalker(wrap, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.textContent.trim() && lines(node, 0, node.textContent.length) > 1) broken.push(name + ' cell: ' + node.textContent);
    }
  }
  const view = table.querySelector('.virtual-table-viewport');
  return {broken, cells: cells.length, names, widths: [view.scrollWidth, view.clientWidth]};
}"""
"""Every number of a numeric cell on one line, and every word (up to ``maxWord`` characters, split
after a hyphen before a letter, as the browser may) of a header or text cell on one line: a range
over it has client rectangles on one line only."""


@pytest.fixture(scope="module")
def first_hour_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A new user's first runs: a full run, a later --limit run, a logprob run, an accuracy-only run,
    and a second model with a long name and a ceiling run."""
    from mmspubench.space.handlers import SpaceConfig, load_state
    from mmspubench.space.layout import build_app

    from .local_app import launch_local
    from .test_board_partial import write_run

    runs = tmp_path_factory.mktemp("first-hour")
    day = "2026-01-0{}T00:00:00+00:00"
    write_run(runs, "full", range(20), day.format(1))
    write_run(runs, "quick", [2, 4], day.format(2))
    write_run(runs, "logprob", range(20), day.format(3), answer_mode="logprob")
    write_run(runs, "acc-only", range(20), day.format(4), metrics=("accuracy",))
    long = "org/a-rather-long-model-name-instruct-v2"
    write_run(runs, "long-std", range(20), day.format(5), model=long)
    write_run(runs, "long-hint", range(20), day.format(6), model=long, prompt_variant="attribute-hint")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "hf_home"))
        env.setenv("HF_HUB_OFFLINE", "1")
        state = load_state(SpaceConfig(results=str(runs), hub_models=()))
        assert len(state.board) == 6, state.board_note
        demo = build_app(state=state)
        url = launch_local(demo)
        try:
            yield url
        finally:
            demo.close()


def test_no_number_and_no_word_of_the_leaderboard_wraps_at_1400_pixels(
    first_hour_url: str, artifacts_dir: Path
) -> None:
    from mmspubench.space.board_widths import NUMBER_COLUMNS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        try:
            page.goto(first_hour_url, wait_until="load")
            page.wait_for_selector("#type-filter", timeout=60_000)
            page.get_by_role("tab", name="Leaderboard").click()
            page.wait_for_selector("#board-table [data-testid=cell-5-0]", timeout=30_000)
            found = page.evaluate(WRAP_CHECK, [sorted(NUMBER_COLUMNS), 16])
            page.screenshot(path=str(artifacts_dir / "space-board-1400.png"), full_page=True)
        finally:
            browser.close()
    assert "Mode" in found["names"] and found["cells"] == 6 * len(found["names"])
    assert found["broken"] == [], found["broken"]  # was: 100.0|0, Averag|e, CGLA_a|cc, Overal|l
    assert found["widths"][0] <= found["widths"][1], found["widths"]  # not cut on the right
