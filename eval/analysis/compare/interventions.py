"""Two runs' interventions side by side in ``compare``: per shared intervention, paired per item.

For every intervention both runs asked every item under (by name, e.g. ``grayscale`` or
``cf:cue-aligned``), per group (overall and per type):

- **accuracy** under it: A's and B's, their paired difference, the interval and McNemar's test
  (a :class:`~mmspubench.eval.analysis.compare.PairedRate`, as for accuracy);
- **change** under it: per item ``100 * (correct under it - correct)`` in percentage points; its mean
  is the run's own ``change.gain``, and the comparison is the mean paired difference of the two
  runs' changes (a :class:`~mmspubench.eval.analysis.compare.PairedMean`): does B's answer move
  more than A's when the image is changed?

When both runs hold interventions, one that only one run holds, or one an item lacks in either run
(``cf:*`` on items without counterfactuals), is not compared; the Markdown names it. The entries are checked first, as each
run's results were computed from them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mmspubench.eval.analysis.compare import adjusted
from mmspubench.eval.analysis.compare.paired import Pair, PairedMean, PairedRate, paired_mean, paired_rate
from mmspubench.eval.analysis.stats import bootstrap_p_value
from mmspubench.eval.records import InterventionAnswer, SampleResult
from mmspubench.eval.views.confounds.cells import fixed, interval

DASH = "—"


@dataclass(frozen=True, slots=True)
class InterventionPair:
    """Both runs under one intervention on one group of items."""

    name: str
    """The intervention (``grayscale``, ``cf:cue-aligned``...)."""
    accuracy: PairedRate
    """Accuracy under the intervention, A and B."""
    change: PairedMean
    """Mean per-item change (under it - published, percentage points), A and B."""
    change_p_value: float = 1.0
    """Two-sided bootstrap p-value of the change's paired difference (same draws as its interval:
    :func:`mmspubench.eval.analysis.stats.bootstrap_p_value`)."""


def names(samples: Sequence[SampleResult]) -> list[str]:
    """The interventions a run's records hold, in the order first met."""
    seen: dict[str, None] = {}
    for sample in samples:
        for entry in sample.interventions or ():
            seen.setdefault(entry.name, None)
    return list(seen)


def _entry(sample: SampleResult, name: str) -> InterventionAnswer | None:
    return next((e for e in sample.interventions or () if e.name == name), None)


def compared_names(pairs: Sequence[Pair]) -> list[str]:
    """The interventions every item holds in both runs, in A's order."""
    b_names = set(names([p.b for p in pairs]))
    return [
        n
        for n in names([p.a for p in pairs])
        if n in b_names and all(_entry(p.a, n) and _entry(p.b, n) for p in pairs)
    ]


def group_pairs(
    chosen: Sequence[Pair], shared: Sequence[str], seed: int, resamples: int
) -> tuple[InterventionPair, ...]:
    """Both runs under each shared intervention on the group's items (none for an empty group)."""
    if not chosen:
        return ()
    out = []
    for name in shared:
        a = [_entry(p.a, name) for p in chosen]
        b = [_entry(p.b, name) for p in chosen]
        right_a = [bool(e and e.reply.correct) for e in a]
        right_b = [bool(e and e.reply.correct) for e in b]
        change_a = [
            100.0 * (float(x) - float(bool(p.a.correct))) for x, p in zip(right_a, chosen, strict=True)
        ]
        change_b = [
            100.0 * (float(y) - float(bool(p.b.correct))) for y, p in zip(right_b, chosen, strict=True)
        ]
        out.append(
            InterventionPair(
                name,
                paired_rate(right_a, right_b, seed, resamples),
                paired_mean(change_a, change_b, seed, resamples),
                bootstrap_p_value(change_a, change_b, seed, resamples),
            )
        )
    return tuple(out)


def to_json(found: Sequence[InterventionPair]) -> dict[str, Any]:
    """``{name: {"accuracy": ..., "change": ...}}`` with intervals as lists."""
    out = {}
    for pair in found:
        figures = {"accuracy": asdict(pair.accuracy), "change": asdict(pair.change)}
        for value in figures.values():
            value["ci95"] = list(value["ci95"])
        figures["change"]["p_value"] = pair.change_p_value
        out[pair.name] = figures
    return out


def _rate(r: dict[str, Any]) -> list[str]:
    from mmspubench.eval.analysis.compare.cli import format_p

    diff = f"{fixed(r['difference'], signed=True)} {interval(r['ci95'])}"
    return [
        fixed(r["a"]),
        fixed(r["b"]),
        diff,
        str(r["only_a"]),
        str(r["only_b"]),
        format_p(r["p_value"]),
        adjusted.cell(r.get("p_adjusted")),
    ]


def _mean(m: dict[str, Any]) -> list[str]:
    from mmspubench.eval.analysis.compare.cli import format_p

    return [
        fixed(m["a"], signed=True),
        fixed(m["b"], signed=True),
        f"{fixed(m['difference'], signed=True)} {interval(m['ci95'])}",
        format_p(m["p_value"]),
        adjusted.cell(m.get("p_adjusted")),
    ]


def markdown(
    doc: dict[str, Any], table: Callable[[Sequence[str], Sequence[Sequence[str]]], list[str]]
) -> list[str]:
    """The tables of the shared interventions (one each) and a line naming those not compared."""
    info = doc.get("interventions")
    if not info:
        return []
    lines: list[str] = []
    p_adj = adjusted.label(doc)
    head = ["Type", "n", "A", "B", "B - A [95% CI]", "right in A only", "right in B only", "McNemar p", p_adj]
    head += ["change A", "change B", "B - A [95% CI]", "bootstrap p", p_adj]
    for name in info["compared"]:
        rows = []
        for g in doc["groups"]:
            figures = (g.get("interventions") or {}).get(name)
            cells = (
                [DASH] * 12 if figures is None else [*_rate(figures["accuracy"]), *_mean(figures["change"])]
            )
            rows.append([g["group"], str(g["n"]), *cells])
        title = (
            f"Under {name} (accuracy under it, %; change: under it - published, percentage points, "
            "per item paired)"
        )
        lines += ["", title, "", *table(head, rows)]
    skipped = [
        f"{label}: {', '.join(info[key])}"
        for key, label in (("only_a", "only in A"), ("only_b", "only in B"), ("partial", "not on every item"))
        if info[key]
    ]
    if skipped:
        lines += ["", "Interventions not compared (" + "; ".join(skipped) + ")"]
    return lines


def summary(pairs: Sequence[Pair]) -> dict[str, list[str]] | None:
    """The document's ``interventions``: compared names, and those only in one run or not on every item."""
    in_a, in_b = names([p.a for p in pairs]), names([p.b for p in pairs])
    if not in_a or not in_b:  # a run without the view (or a side standing for other answers)
        return None
    compared = compared_names(pairs)
    return {
        "compared": compared,
        "only_a": [n for n in in_a if n not in in_b],
        "only_b": [n for n in in_b if n not in in_a],
        "partial": [n for n in in_a if n in in_b and n not in compared],
    }
