"""``compare RUN_A RUN_B RUN ...``: several runs on the same items, every pair and their ranks.

Each pair is compared as two runs are (overall accuracy: the paired difference with its bootstrap
interval, the exact McNemar test); the p-values of all the pairs form one family and are adjusted
together (Holm, or Benjamini-Hochberg with ``--adjust bh``), so "B beats C" is claimed only when it
survives the number of pairs. The runs' ranks come with their rank intervals and tied groups
(:mod:`mmspubench.eval.analysis.stats.ranks`), overall accuracy, all runs resampled with the same
item draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from itertools import combinations
from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.compare import adjusted
from mmspubench.eval.analysis.compare.paired import paired_rate
from mmspubench.eval.analysis.stats import HOLM, adjust_present, rank_intervals, tied_groups
from mmspubench.eval.analysis.stats.adjust import ALPHA
from mmspubench.eval.views.confounds.cells import fixed, interval


def _correct(run: Any, ids: Sequence[str]) -> list[bool]:
    values = [run.samples[i].correct for i in ids]
    if any(v is None for v in values):
        raise MMSpuBenchError(
            f"{run.folder / 'samples.jsonl'}: field 'correct' is missing; compare of several runs "
            "needs runs that computed accuracy"
        )
    return [bool(v) for v in values]


def several(paths: Sequence[str | Path], seed: int, resamples: int, adjust: str = HOLM) -> dict[str, Any]:
    """The document of several runs: each run, every pair (adjusted across pairs), the ranks."""
    from mmspubench.eval.analysis.compare import runs
    from mmspubench.eval.analysis.report import run_names

    if resamples < 1:
        raise MMSpuBenchError(f"--resamples must be positive, got {resamples}")
    if seed < 0:
        raise MMSpuBenchError(f"--seed must be a non-negative integer, got {seed}")
    loaded = [runs.load_run(p) for p in paths]
    for other in loaded[1:]:
        runs.check_same_items(loaded[0], other)
    ids = sorted(loaded[0].samples)
    right = [_correct(run, ids) for run in loaded]
    names = run_names([run.folder for run in loaded])
    rates = [
        (i, j, paired_rate(right[i], right[j], seed, resamples))
        for i, j in combinations(range(len(loaded)), 2)
    ]
    p_adjusted = adjust_present([r.p_value for _, _, r in rates], adjust)
    ranks = rank_intervals(names, [[float(v) for v in row] for row in right], seed, resamples)
    return {
        "runs": [{"name": n, **runs.describe(r)} for n, r in zip(names, loaded, strict=True)],
        "n": len(ids),
        "seed": seed,
        "resamples": resamples,
        "adjustment": {"method": adjust, "alpha": ALPHA, "family": "the pairs"},
        "pairs": [
            {"a": names[i], "b": names[j], "accuracy": {**asdict(r), "ci95": list(r.ci95), "p_adjusted": p}}
            for (i, j, r), p in zip(rates, p_adjusted, strict=True)
        ],
        "ranks": [asdict(r) for r in ranks],
        "tied_groups": [list(g) for g in tied_groups(ranks)],
    }


def _cell(text: str) -> str:
    """A name from a run folder as a table cell: one line, ``|`` escaped."""
    from mmspubench.eval.analysis.report import printable

    return printable(text).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|",
    ]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def markdown(doc: dict[str, Any]) -> str:
    """The Markdown of several runs: the ranks, then every pair."""
    from mmspubench.eval.analysis.compare.cli import format_p

    lines = [
        f"{len(doc['runs'])} runs on {doc['n']} paired items; paired bootstrap 95% CI "
        f"({doc['resamples']} resamples, seed {doc['seed']}); p: exact McNemar, two-sided",
        adjusted.note(doc).replace("across the rows of each table", "across the pairs"),
        "",
        "Ranks (overall accuracy; 95% rank interval, every run resampled with the same items)",
        "",
    ]
    by_name = {run["name"]: run for run in doc["runs"]}
    rows = [
        [
            _cell(r["name"]),
            _cell(by_name[r["name"]]["model"]),
            fixed(r["rate"]),
            f"{r['rank']} [{r['low']}, {r['high']}]",
        ]
        for r in sorted(doc["ranks"], key=lambda r: (r["rank"], r["low"]))
    ]
    lines += _table(["Run", "Model", "Accuracy (%)", "Rank [95% CI]"], rows)
    tied = [" = ".join(_cell(n) for n in g) for g in doc["tied_groups"] if len(g) > 1]
    lines += ["", "Tied (overlapping rank intervals): " + ("; ".join(tied) if tied else "none")]
    head = ["A", "B", "A (%)", "B (%)", "B - A [95% CI]", "right in A only", "right in B only", "McNemar p"]
    rows = []
    for pair in doc["pairs"]:
        r = pair["accuracy"]
        diff = f"{fixed(r['difference'], signed=True)} {interval(r['ci95'])}"
        cells = [
            fixed(r["a"]),
            fixed(r["b"]),
            diff,
            str(r["only_a"]),
            str(r["only_b"]),
            format_p(r["p_value"]),
        ]
        rows.append([_cell(pair["a"]), _cell(pair["b"]), *cells, adjusted.cell(r["p_adjusted"])])
    lines += ["", "Every pair (accuracy, %)", "", *_table([*head, adjusted.label(doc)], rows)]
    return "\n".join(lines)
