"""``report``'s sections on which differences are real, recomputed from the runs' samples.jsonl.

With every run's samples.jsonl beside its results.json (a run folder as ``eval`` writes it):

- **Ranks** (two runs or more, on the same items): each run's rank by accuracy with its 95% rank
  interval, overall and per type (:mod:`~mmspubench.eval.analysis.stats.ranks`), and the tied groups;
- **Detectable differences**: per type, the minimum detectable difference at 80% power and two-sided
  alpha 0.05 (:mod:`~mmspubench.eval.analysis.stats.power`): unpaired from the runs' mean accuracy,
  and paired from the runs' mean share of discordant items (two runs or more on the same items).

A run without its samples (a results.json alone) leaves both out: the table is the one of before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES, TYPE_ABBREV
from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval.analysis.stats.power import mdd_paired, mdd_unpaired
from mmspubench.eval.analysis.stats.ranks import OVERALL, RankInterval, rank_intervals_by_group, tied_text
from mmspubench.eval.metrics import BOOTSTRAP_RESAMPLES
from mmspubench.eval.records import SampleResult

GROUPS: tuple[str, ...] = (OVERALL, *(t.abbrev for t in SPURIOUS_TYPES))
"""Rows and columns in output order: every item, then the nine types."""
SEED = 0
"""Seed of the rank intervals' bootstrap (as ``compare``'s default)."""
DASH = "—"


@dataclass(frozen=True, slots=True)
class Outcomes:
    """The runs' right/wrong answers on their common items, in item-id order."""

    names: tuple[str, ...]
    """Each run's name in the table (its ``Run`` or ``Model`` cell)."""
    right: np.ndarray
    """runs x items, 1.0 right, 0.0 wrong or unparsed."""
    types: tuple[tuple[str, ...], ...]
    """Each item's canonical type names."""


def outcomes(names: Sequence[str], samples: Sequence[Sequence[SampleResult]]) -> Outcomes | None:
    """The runs' outcomes when every run answered the same items with accuracy; ``None`` otherwise."""
    by_id = [{s.id: s for s in run} for run in samples]
    ids = sorted(by_id[0])
    if not ids or any(sorted(run) != ids for run in by_id):
        return None
    if any(run[i].correct is None or run[i].types != by_id[0][i].types for run in by_id for i in ids):
        return None
    right = np.asarray([[float(bool(run[i].correct)) for i in ids] for run in by_id])
    return Outcomes(tuple(names), right, tuple(tuple(by_id[0][i].types) for i in ids))


def ranks(found: Outcomes, seed: int = SEED) -> dict[str, tuple[RankInterval, ...] | None]:
    """Rank intervals overall and per type (two runs or more)."""
    return rank_intervals_by_group(list(found.names), found.right, found.types, seed, BOOTSTRAP_RESAMPLES)


def _group(found: Outcomes, group: str) -> np.ndarray:
    if group == OVERALL:
        return found.right
    keep = [i for i, ts in enumerate(found.types) if any(TYPE_ABBREV.get(t) == group for t in ts)]
    return found.right[:, keep]


def _cell(value: float | None) -> str:
    return DASH if value is None else f"{value:.1f}"


def mdd_rows(found: Outcomes) -> list[list[str]]:
    """Per group: n, mean accuracy, unpaired MDD, mean discordant share, paired MDD (two runs or more)."""
    rows = []
    for group in GROUPS:
        data = _group(found, group)
        n = data.shape[1]
        if n == 0:
            rows.append([group, "0", DASH, DASH, DASH, DASH])
            continue
        rate = 100.0 * float(data.mean())
        pairs = list(combinations(range(data.shape[0]), 2))
        share = float(np.mean([np.mean(data[i] != data[j]) for i, j in pairs])) if pairs else None
        paired = None if share is None else mdd_paired(n, share)
        shown_share = DASH if share is None else f"{100.0 * share:.1f}"
        rows.append([group, str(n), f"{rate:.1f}", _cell(mdd_unpaired(n, rate)), shown_share, _cell(paired)])
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def cell(text: str) -> str:
    """A name as a table cell: one line, non-printable characters and ``|`` escaped."""
    from mmspubench.eval.analysis.report import printable

    return printable(text).replace("|", "\\|")


def rank_section(found: Outcomes) -> list[str]:
    """The ranks table (one row per run: overall and per type) and the tied groups, overall."""
    by_group = ranks(found)
    overall = by_group[OVERALL]
    assert overall is not None  # every run has items
    rows = []
    for i, name in enumerate(found.names):
        cells = [DASH if (got := by_group[g]) is None else got[i].label() for g in GROUPS]
        rows.append([cell(name), *cells])
    order = sorted(range(len(rows)), key=lambda i: (overall[i].rank, overall[i].low, i))
    title = (
        f"Ranks by accuracy with 95% rank intervals (paired bootstrap over the items, {BOOTSTRAP_RESAMPLES} "
        f"resamples, seed {SEED}; every run resampled with the same items)"
    )
    ties = tied_text([RankInterval(cell(r.name), r.rate, r.rank, r.low, r.high) for r in overall])
    return [
        "",
        title,
        "",
        *_table(["Run", *GROUPS], [rows[i] for i in order]),
        "",
        f"Tied groups (overlapping rank intervals, overall): {ties}",
    ]


def mdd_section(found: Outcomes) -> list[str]:
    """The detectable differences per type."""
    head = ["Type", "n", "accuracy (%)", "unpaired MDD", "discordant (%)", "paired MDD"]
    return [
        "",
        "Minimum detectable difference (percentage points; 80% power, two-sided alpha 0.05): unpaired "
        "from the runs' mean accuracy, paired from their mean share of items right in one run only",
        "",
        *_table(head, mdd_rows(found)),
    ]


def _samples_beside(results_path: Path, results: Mapping[str, Any]) -> list[SampleResult] | None:
    """The samples.jsonl beside ``results_path`` (``None`` when there is none), refused when another
    run wrote it (its run stamps), as ``report --plot`` reads it."""
    from mmspubench.eval.results import SAMPLES_NAME, read_finished_samples
    from mmspubench.eval.run_stamp import check_samples_beside

    path = results_path.parent / SAMPLES_NAME
    if not path.is_file():
        return None
    samples = read_finished_samples(path)
    check_samples_beside(path, results, results_path)
    return samples


def sections(
    runs: Sequence[Mapping[str, Any]], names: Sequence[str], results_files: Sequence[Path]
) -> list[str]:
    """Both sections for ``report`` (none when a run has no samples.jsonl beside it)."""
    try:
        samples = [_samples_beside(f, r) for f, r in zip(results_files, runs, strict=True)]
    except MMSpuBenchError as err:  # samples.jsonl of another run beside a (copied or edited) results.json
        return ["", f"No ranks or detectable differences: {first_line(err)}"]
    if any(s is None or not s for s in samples):
        return []
    found = outcomes(names, [s for s in samples if s is not None])
    if found is None:
        note = "No ranks or detectable differences: the runs do not hold the same items with their accuracy"
        return ["", note]
    return (rank_section(found) if len(names) > 1 else []) + mdd_section(found)


def overall_ranks(
    labels: Sequence[str], samples: Sequence[Sequence[SampleResult] | None]
) -> tuple[RankInterval, ...] | None:
    """The runs' overall rank intervals for ``report --plot`` (``None``: fewer than two runs, a run
    without samples, or runs on other items)."""
    if len(labels) < 2 or any(not s for s in samples):
        return None
    found = outcomes(labels, [s for s in samples if s])
    return None if found is None else ranks(found)[OVERALL]
