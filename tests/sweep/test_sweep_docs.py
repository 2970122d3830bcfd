"""The sweeps page's first example runs as written: its SWEEP.yaml on the two bundled models, its
``--dry-run`` output the command's own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.eval.bundled import BALANCED_MODEL, BIASED_MODEL

from tests.docs_examples import DOCS, Block, blocks

PAGE = DOCS / "evaluate" / "sweeps.md"


def _example() -> tuple[Block, Block]:
    """The page's YAML block on the bundled models, and the first text block after it (the dry run)."""
    found = blocks(PAGE)
    sweep = next(b for b in found if b.lang == "yaml" and "eval/assets/tiny-llava-biased" in b.body)
    output = next(b for b in found[sweep.index + 1 :] if b.lang == "text")
    return sweep, output


@pytest.fixture
def checkout_like(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the page's quick.yaml and the bundled models where a checkout has them."""
    for model in (BIASED_MODEL, BALANCED_MODEL):
        shutil.copytree(model, tmp_path / "eval" / "assets" / model.name)
    (tmp_path / "quick.yaml").write_text(_example()[0].body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_dry_run_output_is_what_the_command_prints(
    checkout_like: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", "quick.yaml", "--dry-run"]) == 0
    assert capsys.readouterr().out == _example()[1].body
    assert not (checkout_like / "runs").exists()


RUNS = ("biased--standard", "biased--core-focus", "balanced--standard", "balanced--core-focus")


def test_the_pages_example_sweep_runs(checkout_like: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "quick.yaml", "--max-parallel", "2"]) == 0
    assert "4 finished of 4 runs" in capsys.readouterr().out
    root = checkout_like / "runs" / "quick"
    for run in RUNS:
        results = json.loads((root / run / "results.json").read_text(encoding="utf-8"))
        assert results["dataset"]["n"] == 2
    assert len(list((root / "compare").glob("*-vs-standard.json"))) == 2
    # report.md is what `mmspubench report` of the four runs prints: the table, the rank intervals
    assert main(["report", *(str(root / run) for run in RUNS)]) == 0
    report = (root / "report.md").read_text(encoding="utf-8")
    assert report == capsys.readouterr().out and "Ranks by accuracy" in report
