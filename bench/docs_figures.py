"""The documentation's figures, drawn from real runs of the bundled models (``make docs-figures``).

Two ``mmspubench eval`` runs on the bundled synthetic release (90 items): the default model
(tiny-llava-biased) and its balanced twin. Then, with the commands the docs show:

- ``mmspubench report BIASED --plot docs/figures/per-type.png``: the README's figure;
- ``mmspubench report BIASED BALANCED --plot docs/figures/per-type-both.png``;
- ``mmspubench compare BIASED BALANCED --plot docs/figures/compare.png``;
- the default model with ``--prompt-variant core-focus`` and ``attribute-hint``: ``report`` of the
  three variants (``--plot docs/figures/variants.png``) and ``compare`` of standard and core-focus;

the printed tables beside them (``report.md``, ``compare.md``, ``variants.md``,
``variants-compare.md``), which the docs include as they are, and a screenshot of the Space serving
these runs (``space.png``, ``bench/docs_space_shot.py``; ``--no-space`` leaves it as it is). The runs are made in a temporary folder (``--keep DIR`` keeps them), offline.

    python bench/docs_figures.py                 # writes docs/figures/
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BALANCED = ROOT / "eval" / "assets" / "tiny-llava-balanced"
FIGURES = ("per-type.png", "per-type-both.png", "compare.png", "variants.png")
"""The figures it draws, under ``docs/figures/`` (the docs show nothing else)."""
TABLES = ("report.md", "compare.md", "variants.md", "variants-compare.md")
"""The printed tables it keeps beside them (included by the pages as they are)."""
SCREENSHOTS = ("space.png",)
"""The Space, photographed in Chromium (skipped with ``--no-space``)."""


def mmspubench(*args: str | Path, cwd: Path) -> str:
    """Run ``mmspubench ARGS`` with this interpreter in ``cwd``; its stdout (a failure stops the script)."""
    command = [sys.executable, "-m", "mmspubench.cli", *map(str, args)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"docs_figures: `mmspubench {' '.join(map(str, args))}` failed:\n{done.stderr}")
    return done.stdout


def run(work: Path, name: str, *options: str | Path) -> Path:
    """``mmspubench eval OPTIONS --out runs/NAME`` in ``work`` unless that run finished; its folder."""
    folder = work / "runs" / name
    if not (folder / "results.json").exists():
        mmspubench("eval", *options, "--out", folder, "--no-progress", cwd=work)
    return folder


def space_screenshot(out: Path, work: Path) -> Path:
    """``bench/docs_space_shot.py``'s screenshot of the Space serving the runs under ``work/runs``."""
    spec = importlib.util.spec_from_file_location(
        "docs_space_shot", Path(__file__).with_name("docs_space_shot.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.screenshot(out / SCREENSHOTS[0], work / "runs", work))


def draw(out: Path, work: Path, space: bool = True) -> list[Path]:
    """The runs, then the figures and tables under ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    biased, balanced = run(work, "biased"), run(work, "balanced", "--model", BALANCED)
    core_focus = run(work, "core-focus", "--prompt-variant", "core-focus")
    hint = run(work, "attribute-hint", "--prompt-variant", "attribute-hint")
    written = [out / name for name in FIGURES]
    mmspubench("report", biased, "--plot", written[0], cwd=work)
    printed = (
        mmspubench("report", biased, balanced, "--plot", written[1], cwd=work),
        mmspubench("compare", biased, balanced, "--plot", written[2], cwd=work),
        mmspubench("report", biased, core_focus, hint, "--plot", written[3], cwd=work),
        mmspubench("compare", biased, core_focus, cwd=work),
    )
    for name, text in zip(TABLES, printed, strict=True):
        (out / name).write_text(text.replace(str(work) + "/", ""), encoding="utf-8")
        written.append(out / name)
    if space:
        written.append(space_screenshot(out, work))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures", help="where the figures go")
    parser.add_argument("--keep", type=Path, default=None, help="make (or reuse) the runs in this folder")
    parser.add_argument("--no-space", dest="space", action="store_false", help="no Space screenshot")
    args = parser.parse_args(argv)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        written = draw(args.out.resolve(), args.keep.resolve(), args.space)
    else:
        with tempfile.TemporaryDirectory(prefix="mmspubench-docs-") as work:
            written = draw(args.out.resolve(), Path(work), args.space)
    for path in written:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
