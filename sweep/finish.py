"""The end of a sweep: ``report`` of every finished run and ``compare`` of each variant against
``standard`` per model, written into the root with eval's own functions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mmspubench.eval.results import RESULTS_NAME, write_bytes_atomic
from mmspubench.sweep.spec import PlannedRun

REPORT_NAME = "report.md"
PLOT_NAME = "report.png"
COMPARE_DIR = "compare"


def _write(path: Path, text: str) -> None:
    write_bytes_atomic(path, [text.encode("utf-8")])


def write_report(root: Path, runs: Sequence[PlannedRun], plot: bool) -> Path | None:
    """``root/report.md`` (and ``root/report.png``) of the finished ``runs``, as ``mmspubench report``
    of them writes it; ``None`` if there are none."""
    from mmspubench.eval.analysis.report import load_for_report, markdown_table, run_names
    from mmspubench.eval.analysis.stats.tables import sections

    paths = [str(r.folder / RESULTS_NAME) for r in runs]
    if not paths:
        return None
    loaded, names = load_for_report(paths), run_names(paths)
    # as `mmspubench report` of the runs: the table, then the rank intervals, tied groups and each
    # type's minimum detectable difference of the runs on the same items
    text = "\n".join([markdown_table(loaded, names), *sections(loaded, names, [Path(p) for p in paths])])
    _write(root / REPORT_NAME, text + "\n")
    if plot:
        from mmspubench.eval.analysis.plots import write_report_plot

        write_report_plot(paths, root / PLOT_NAME)
    return root / REPORT_NAME


def write_compares(root: Path, runs: Sequence[PlannedRun], plot: bool) -> list[Path]:
    """``root/compare/<model>--<variant>.{json,md}``: each finished variant against its model's standard run."""
    from mmspubench.eval.analysis.compare.cli import comparison, markdown

    standard = {r.model_name: r for r in runs if r.variant == "standard"}
    written = []
    for run in runs:
        base = standard.get(run.model_name)
        if run.variant == "standard" or base is None:
            continue
        doc = comparison(base.folder, run.folder)
        out = root / COMPARE_DIR / f"{run.name}-vs-standard"
        _write(
            out.with_suffix(".json"), json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        )
        _write(out.with_suffix(".md"), markdown(doc) + "\n")
        if plot:
            from mmspubench.eval.analysis.plots import compare_figure

            write_bytes_atomic(out.with_suffix(".png"), [compare_figure(doc, "png")])
        written.append(out.with_suffix(".md"))
    return written
