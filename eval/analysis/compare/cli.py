"""``mmspubench compare RUN_A RUN_B``: paired differences of two runs on the same items.

Markdown on stdout (an accuracy table and, when both runs have CGLA, a CGLA table), the same
figures as JSON with ``--json FILE`` (``-``: JSON on stdout instead of the Markdown), and a figure
of the differences with ``--plot FILE.png|svg``. Everything is computed and checked before any
file is written; each file is written atomically.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.compare import adjusted, interventions, paired
from mmspubench.eval.analysis.compare.paired import GroupComparison, PairedMean, PairedRate
from mmspubench.eval.analysis.compare.runs import Sides
from mmspubench.eval.analysis.compare.side_intervention import check_entries
from mmspubench.eval.analysis.report import printable
from mmspubench.eval.analysis.stats import HOLM, METHODS
from mmspubench.eval.environment import differences, shown_value
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES
from mmspubench.eval.results_file import Results
from mmspubench.eval.views.confounds.cells import fixed, interval
from mmspubench.options import add_fields, values_of

if TYPE_CHECKING:
    from mmspubench.eval.analysis.compare.paired import Pair
    from mmspubench.eval.analysis.compare.runs import Run

DASH = "—"
EPILOG = """examples:
  mmspubench eval --answer-mode generate --out runs/gen
  mmspubench eval --answer-mode logprob --out runs/lp
  mmspubench compare runs/gen runs/lp                       # Markdown tables on stdout
  mmspubench compare runs/gen runs/lp --json cmp.json --plot cmp.png
  mmspubench eval --metrics accuracy,blind --out runs/blind
  mmspubench compare runs/blind runs/blind --b-view blind   # the run without its image (B) against with it
  mmspubench eval --metrics accuracy,interventions --interventions grayscale --out runs/grey
  mmspubench compare runs/grey runs/grey --b-view intervention:grayscale   # under grayscale (B) against as published
  mmspubench compare runs/gen runs/lp runs/blind            # every pair, p-values adjusted across the pairs
  mmspubench compare runs/gen runs/lp --adjust bh           # Benjamini-Hochberg instead of Holm
"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``compare`` to the ``mmspubench`` parser."""
    p = sub.add_parser(
        "compare",
        help="paired comparison of two runs on the same items (bootstrap CI, McNemar)",
        description="Per spurious type and overall: accuracy of each run, the difference B - A with a "
        "paired bootstrap 95% interval, the exact McNemar p-value and the items right in one run "
        "only; the same for CGLA_acc, and the mean paired difference of CGLA_min.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_a", metavar="RUN_A", help="run folder (results.json + samples.jsonl)")
    p.add_argument("run_b", metavar="RUN_B", help="run folder on the same items")
    p.add_argument(
        "more_runs",
        nargs="*",
        metavar="RUN",
        help="more run folders on the same items: every pair is compared (overall accuracy), "
        "the p-values adjusted across the pairs",
    )
    p.add_argument(
        "--json", metavar="FILE", default=None, help="also write the figures as JSON ('-': stdout)"
    )
    p.add_argument("--plot", metavar="FILE", default=None, help="draw the differences (.png or .svg)")
    p.add_argument("--seed", type=int, default=0, help="seed of the paired bootstrap (default 0)")
    p.add_argument(
        "--resamples",
        type=int,
        default=BOOTSTRAP_RESAMPLES,
        help=f"bootstrap resamples (default {BOOTSTRAP_RESAMPLES})",
    )
    p.add_argument(
        "--adjust",
        choices=METHODS,
        default=HOLM,
        help="adjustment of the p-values across the rows of a table, or across the pairs of several "
        "runs: holm (family-wise error, the default) or bh (Benjamini-Hochberg, false discovery rate)",
    )
    add_fields(p, Sides)
    p.set_defaults(func=run_compare_command)


def comparison(
    run_a: str | Path,
    run_b: str | Path,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
    sides: Sides | None = None,
    adjust: str = HOLM,
) -> dict[str, Any]:
    """The comparison document (what ``--json`` writes) of two run folders, each taken as its side
    says; the p-values of each table also adjusted by ``adjust`` (:mod:`.adjusted`)."""
    from mmspubench.eval.analysis.compare import runs

    if resamples < 1:
        raise MMSpuBenchError(f"--resamples must be positive, got {resamples}")
    if seed < 0:
        raise MMSpuBenchError(f"--seed must be a non-negative integer, got {seed}")
    sides = sides or Sides()
    a = runs.with_side(runs.load_run(run_a), sides.a_view, "a")
    b = runs.with_side(runs.load_run(run_b), sides.b_view, "b")
    for side, run in (("RUN_A", a), ("RUN_B", b)):
        if interventions.names(list(run.samples.values())):  # checked as the run's results were
            check_entries(run.samples, run.results, run.folder, side)
    pairs = runs.pairs(a, b)
    return adjusted.with_adjusted(_document(a, b, pairs, seed, resamples), adjust)


def _document(a: Run, b: Run, pairs: Sequence[Pair], seed: int, resamples: int) -> dict[str, Any]:
    """The document of two checked runs and their paired items, before the adjustment."""
    from mmspubench.eval.analysis.compare import runs

    groups = paired.compare_pairs(pairs, seed, resamples)
    dataset = {} if a.results.dataset is None else a.results.dataset.to_json()
    intervened = interventions.summary(pairs)
    return {
        "a": runs.describe(a),
        "b": runs.describe(b),
        "config_differences": runs.config_differences(a, b),
        "environment_differences": {
            key: values
            for key, values in differences(
                [a.results.environment, b.results.environment],
                same_model=_model_id(a.results) == _model_id(b.results),
            )
        },
        "dataset": {k: dataset.get(k) for k in ("kind", "id", "path", "revision", "content_hash", "split")},
        "n": groups[0].n,
        "seed": seed,
        "resamples": resamples,
        "groups": [paired.group_to_json(g) for g in groups],
        **({} if intervened is None else {"interventions": intervened}),
    }


def _model_id(results: Results) -> str | None:
    return None if results.model is None else results.model.id


def _groups(doc: dict[str, Any]) -> list[GroupComparison]:
    def rate(obj: dict[str, Any] | None) -> PairedRate | None:
        return None if obj is None else PairedRate(**{**obj, "ci95": tuple(obj["ci95"])})

    def mean(obj: dict[str, Any] | None) -> PairedMean | None:
        return None if obj is None else PairedMean(**{**obj, "ci95": tuple(obj["ci95"])})

    return [
        GroupComparison(
            g["group"],
            g["n"],
            rate(g["accuracy"]),
            rate(g["cgla_acc"]),
            mean(g["cgla_min"]),
            circular=rate(g.get("circular")),
            blind=rate(g.get("blind")),
            gain=mean(g.get("gain")),
            brier=mean(g.get("brier")),
            ece=mean(g.get("ece")),
        )
        for g in doc["groups"]
    ]


def format_p(value: float) -> str:
    """A p-value as printed: three significant digits, scientific below 0.001."""
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"


def _rate_cells(r: PairedRate | None) -> list[str]:
    if r is None:
        return [DASH] * 7
    return [
        fixed(r.a),
        fixed(r.b),
        f"{fixed(r.difference, signed=True)} {interval(r.ci95)}",
        str(r.only_a),
        str(r.only_b),
        format_p(r.p_value),
        adjusted.cell(r.p_adjusted),
    ]


def _mean_cells(m: PairedMean | None, digits: int = 3) -> list[str]:
    if m is None:
        return [DASH] * 3
    d = digits
    return [fixed(m.a, d), fixed(m.b, d), f"{fixed(m.difference, d, True)} {interval(m.ci95, d)}"]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _title(doc: dict[str, Any]) -> list[str]:
    def name(letter: str) -> str:
        run = doc[letter]
        side = f"; {run['view']}" if run.get("view") else ""
        return f"{run['model']} (variant {run['variant']}, {run['answer_mode']}{side}; {run['folder']})"

    diffs = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in doc["config_differences"].items())
    environment = doc.get("environment_differences") or {}
    produced = "; ".join(f"{key} {shown_value(a)} vs {shown_value(b)}" for key, (a, b) in environment.items())
    return [
        f"A: {name('a')}",
        f"B: {name('b')}",
        *([f"The runs differ in what produced them (A vs B): {printable(produced)}"] if produced else []),
        f"{doc['n']} paired items; differences are B - A; paired bootstrap 95% CI "
        f"({doc['resamples']} resamples, seed {doc['seed']}); p: exact McNemar, two-sided"
        + (f"; options that differ: {diffs}" if diffs else ""),
    ]


def markdown(doc: dict[str, Any]) -> str:
    """The Markdown of a comparison document: accuracy table, then CGLA table when present."""
    groups = _groups(doc)
    p_adj = adjusted.label(doc)
    lines = [*_title(doc), adjusted.note(doc), "", "Accuracy (%)", ""]
    head = ["Type", "n", "A", "B", "B - A [95% CI]", "right in A only", "right in B only", "McNemar p", p_adj]
    lines += _table(head, [[g.group, str(g.n), *_rate_cells(g.accuracy)] for g in groups])
    if any(g.cgla_acc is not None for g in groups):
        head = ["Type", "n", "CGLA_acc A", "CGLA_acc B", "B - A [95% CI]", "A only", "B only", "McNemar p"]
        head += [p_adj, "CGLA_min A", "CGLA_min B", "mean B - A [95% CI]"]
        rows = [[g.group, str(g.n), *_rate_cells(g.cgla_acc), *_mean_cells(g.cgla_min)] for g in groups]
        lines += ["", "CGLA (CGLA_acc in %, CGLA_min in nats)", "", *_table(head, rows)]
    return "\n".join(lines + _confound_tables(groups, p_adj) + interventions.markdown(doc, _table))


RATE_TABLES = (
    ("circular", "Circular accuracy (%; an item is right when all four rotations are)"),
    ("blind", "Blind accuracy (%; the answer without the image)"),
)


def _confound_tables(groups: Sequence[GroupComparison], p_adj: str) -> list[str]:
    """The tables of the confound figures both runs hold (none: nothing)."""
    lines: list[str] = []
    head = ["Type", "n", "A", "B", "B - A [95% CI]", "right in A only", "right in B only", "McNemar p", p_adj]
    for key, title in RATE_TABLES:
        if any(getattr(g, key) is not None for g in groups):
            rows = [[g.group, str(g.n), *_rate_cells(getattr(g, key))] for g in groups]
            lines += ["", title, "", *_table(head, rows)]
    if any(g.gain is not None for g in groups):
        rows = [[g.group, str(g.n), *_mean_cells(g.gain, 2)] for g in groups]
        title = "Gain of the image (accuracy with the image - blind accuracy, percentage points)"
        lines += ["", title, "", *_table(["Type", "n", "gain A", "gain B", "B - A [95% CI]"], rows)]
    if any(g.brier is not None for g in groups):
        head = ["Type", "n", "Brier A", "Brier B", "B - A [95% CI]", "ECE A", "ECE B", "B - A [95% CI]"]
        rows = [[g.group, str(g.n), *_mean_cells(g.brier), *_mean_cells(g.ece)] for g in groups]
        lines += [
            "",
            "Calibration (Brier and ECE, 15 bins; fractions, lower is better)",
            "",
            *_table(head, rows),
        ]
    return lines


def _check_outputs(args: argparse.Namespace) -> None:
    """Neither output names an input (a run's folder, or the files of a results.json given) nor the other."""
    from mmspubench.eval.results import run_inputs
    from mmspubench.outputs import refuse_overlap

    inputs = [*run_inputs(args.run_a), *run_inputs(args.run_b)]
    inputs += [path for run in args.more_runs for path in run_inputs(run)]
    json_file = None if args.json in (None, "-") else args.json
    if json_file is not None:
        refuse_overlap("--json", json_file, inputs)
    if args.plot is not None:
        refuse_overlap("--plot", args.plot, [*inputs, *([json_file] if json_file else [])])


def run_compare_command(args: argparse.Namespace) -> int:
    """``mmspubench compare``: check, compute, then write (plot, JSON) and print."""
    from mmspubench.eval.analysis import plots
    from mmspubench.eval.results import write_bytes_atomic

    _check_outputs(args)
    if args.more_runs:
        return _run_several(args)
    plot_format = None if args.plot is None else plots.check_plot_path(args.plot)
    if plot_format is not None:
        plots.require_matplotlib()
    sides = Sides(**values_of(Sides, args))
    doc = comparison(args.run_a, args.run_b, args.seed, args.resamples, sides, args.adjust)
    # Every output is rendered before the first file is written.
    figure = None if plot_format is None else plots.compare_figure(doc, plot_format)
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if figure is not None:
        write_bytes_atomic(Path(args.plot), [figure])
        print(f"mmspubench compare: wrote the figure {args.plot}", file=sys.stderr)
    if args.json == "-":
        print(text, end="")
        return 0
    if args.json is not None:
        write_bytes_atomic(Path(args.json), [text.encode("utf-8")])
        print(f"mmspubench compare: wrote the comparison {args.json}", file=sys.stderr)
    print(markdown(doc))
    return 0


def _run_several(args: argparse.Namespace) -> int:
    """``compare`` of three runs or more: every pair and the ranks (no figure, each run as published)."""
    from mmspubench.eval.analysis.compare import several
    from mmspubench.eval.results import write_bytes_atomic

    if args.plot is not None:
        raise MMSpuBenchError("--plot draws two runs; compare of more than two runs draws no figure")
    if Sides(**values_of(Sides, args)) != Sides():
        raise MMSpuBenchError("--a-view and --b-view take two runs; compare of more than two runs takes none")
    doc = several.several([args.run_a, args.run_b, *args.more_runs], args.seed, args.resamples, args.adjust)
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if args.json == "-":
        print(text, end="")
        return 0
    if args.json is not None:
        write_bytes_atomic(Path(args.json), [text.encode("utf-8")])
        print(f"mmspubench compare: wrote the comparison {args.json}", file=sys.stderr)
    print(several.markdown(doc))
    return 0
