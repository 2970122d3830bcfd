"""What the figures show, as plain data (no matplotlib): per-type bars of runs, paired differences.

``report --plot`` draws :func:`report_series` of each run; the Space can show the same data. A
run's per-type accuracy intervals come from its results.json (``accuracy.ci95.by_type``); the
CGLA_acc intervals per type, which results.json does not hold, are the same seeded bootstrap
(:func:`mmspubench.eval.metrics.bootstrap_ci`, the run's seed) over the items of ``samples.jsonl``.
Without samples a bar has no interval (``None``), never a made-up one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.hub import display_name
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES
from mmspubench.eval import metrics
from mmspubench.eval.records import SampleResult
from mmspubench.eval.variants import CEILING_MARK, is_ceiling, recorded, variant_label

OVERALL = "Overall"
REPORT_GROUPS: tuple[str, ...] = (*(t.abbrev for t in SPURIOUS_TYPES), OVERALL)
"""Bar groups of ``report --plot``: the nine types in Table 2's order, then all items."""
Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Series:
    """One run's bars: a value and its 95% interval per group of :data:`REPORT_GROUPS`."""

    label: str
    """Legend text (the model, with variant and answer mode where runs share a model)."""
    accuracy: tuple[float | None, ...]
    """Accuracy in percent per group; ``None`` where the group has no item or accuracy was not run."""
    accuracy_ci95: tuple[Interval | None, ...]
    """Bootstrap 95% interval of each accuracy bar."""
    cgla_acc: tuple[float | None, ...]
    """CGLA_acc in percent per group; ``None`` where not computed."""
    cgla_acc_ci95: tuple[Interval | None, ...]
    """Bootstrap 95% interval of each CGLA_acc bar (from samples.jsonl)."""
    n: tuple[int | None, ...] = ()
    """Items per group (results.json ``n_by_type`` and ``n``); ``None`` where it records none."""
    answer_mode: str | None = None
    """The run's ``config.answer_mode`` (``generate``, ``logprob``); ``None`` where it records none."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_interval(value: Any) -> Interval | None:
    """Two finite numbers, or ``None`` (a hand-edited file shows no interval, never a crash)."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(v) for v in value):
        return (float(value[0]), float(value[1]))
    return None


def read_number(value: Any) -> float | None:
    """A finite number as a float, or ``None``."""
    return float(value) if _number(value) else None


def read_mapping(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are objects, else empty."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def error_bars(values: Sequence[float | None], cis: Sequence[Interval | None]) -> list[list[float]]:
    """Matplotlib ``yerr`` of bars with their intervals (0 where a value or interval is missing)."""
    low, high = [], []
    for value, ci in zip(values, cis, strict=True):
        if value is None or ci is None:
            low.append(0.0)
            high.append(0.0)
        else:
            low.append(max(0.0, value - ci[0]))
            high.append(max(0.0, ci[1] - value))
    return [low, high]


def _ci_from_samples(samples: Sequence[SampleResult], get: Any, seed: int) -> dict[str, Interval | None]:
    groups = metrics.group_by_type(
        [metrics.Scored(s.types, 1.0 if get(s) else 0.0) for s in samples if get(s) is not None]
    )
    out: dict[str, Interval | None] = {
        k: (metrics.bootstrap_ci([v == 1.0 for v in vals], seed) if vals else None)
        for k, vals in groups.items()
    }
    every = [bool(get(s)) for s in samples if get(s) is not None]
    out[OVERALL] = metrics.bootstrap_ci(every, seed) if every else None
    return out


def _accuracy(
    results: Mapping[str, Any], samples: Sequence[SampleResult] | None, seed: int
) -> tuple[list[Any], list[Any]]:
    acc = read_mapping(results, "accuracy")
    by_type = {**read_mapping(acc, "by_type"), OVERALL: acc.get("overall")}
    ci = read_mapping(acc, "ci95")
    intervals = {**read_mapping(ci, "by_type"), OVERALL: ci.get("overall")}
    if samples and not (ci.get("by_type") and ci.get("overall")):
        intervals = dict(_ci_from_samples(samples, lambda s: s.correct, seed))
    return [read_number(by_type.get(g)) for g in REPORT_GROUPS], [
        read_interval(intervals.get(g)) for g in REPORT_GROUPS
    ]


def _cgla(
    results: Mapping[str, Any], samples: Sequence[SampleResult] | None, seed: int
) -> tuple[list[Any], list[Any]]:
    cgla = read_mapping(results, "cgla")
    by_type = {**read_mapping(cgla, "by_type"), OVERALL: cgla.get("acc")}
    ci = read_mapping(cgla, "ci95")
    intervals: dict[str, Any] = {**read_mapping(ci, "by_type"), OVERALL: ci.get("acc")}
    if samples and cgla and not ci.get("by_type"):
        intervals = {**_ci_from_samples(samples, lambda s: s.cgla_acc, seed), OVERALL: ci.get("acc")}
    return [read_number(by_type.get(g)) for g in REPORT_GROUPS], [
        read_interval(intervals.get(g)) for g in REPORT_GROUPS
    ]


def read_count(value: Any) -> int | None:
    """A non-negative integer, or ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _n(results: Mapping[str, Any]) -> tuple[int | None, ...]:
    """Items per group, from the accuracy section (else the CGLA one); a type it lists no item of: 0."""
    section = read_mapping(results, "accuracy") or read_mapping(results, "cgla")
    by_type = read_mapping(section, "n_by_type")
    counts = {**({g: 0 for g in REPORT_GROUPS} if by_type else {}), **by_type, OVERALL: section.get("n")}
    return tuple(read_count(counts.get(g)) for g in REPORT_GROUPS)


TICK_LINE_CHARACTERS = 10
"""Longest run of counts on one line of a tick label (``10/10/0``, ``90/90/90``): a longer line would
run into the next group's label, so the counts wrap, each further line starting with its ``/``
(``n=2400/2400`` then ``/2400``), which reads as the list it continues."""


def group_ticks(series: Sequence[Series]) -> list[str]:
    """The x tick labels: each group with its n, one n when every run has the same (``BG\nn=12``),
    else one per run in the legend's order (``n=12/0/12``; ``?`` for a run recording none),
    wrapped at :data:`TICK_LINE_CHARACTERS`."""
    return count_ticks([s.n for s in series])


def count_ticks(counts: Sequence[Sequence[int | None]]) -> list[str]:
    """:func:`group_ticks` of the runs' items per group of :data:`REPORT_GROUPS` (one sequence per run)."""
    ticks = []
    for k, group in enumerate(REPORT_GROUPS):
        here = [n[k] if len(n) > k else None for n in counts]
        if all(n is None for n in here):
            ticks.append(group)
            continue
        shown = [str(here[0])] if len(set(here)) == 1 else ["?" if n is None else str(n) for n in here]
        lines = [shown[0]]
        for count in shown[1:]:
            if len(lines[-1]) + 1 + len(count) <= TICK_LINE_CHARACTERS:
                lines[-1] += f"/{count}"
            else:
                lines.append(f"/{count}")
        ticks.append(f"{group}\nn=" + "\n".join(lines))
    return ticks


def run_seed(results: Mapping[str, Any]) -> int:
    """The run's bootstrap seed (``config.seed``), 0 where the file holds none a generator takes."""
    seed = read_mapping(results, "config").get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**32 else 0


def report_series(results: Mapping[str, Any], samples: Sequence[SampleResult] | None, label: str) -> Series:
    """One run's bars from its results.json and (for the intervals it lacks) its samples."""
    seed = run_seed(results)
    acc, acc_ci = _accuracy(results, samples, seed)
    cgla, cgla_ci = _cgla(results, samples, seed)
    mode = read_mapping(results, "config").get("answer_mode")
    return Series(
        label,
        tuple(acc),
        tuple(acc_ci),
        tuple(cgla),
        tuple(cgla_ci),
        _n(results),
        mode if isinstance(mode, str) and mode else None,
    )


def _variant(results: Mapping[str, Any]) -> str:
    config = results.get("config") or {}
    if isinstance(config, Mapping) and not config.get("prompt_variant") and config.get("variant"):
        return str(config["variant"])
    return variant_label(config)


def run_labels(runs: Sequence[Mapping[str, Any]], folders: Sequence[Path]) -> list[str]:
    """Legend labels: the model, plus variant and answer mode (then the folder) where they repeat."""

    def model(r: Mapping[str, Any]) -> str:
        m = r.get("model") or {}
        return display_name(str(m.get("id") or m.get("path") or "?"))

    labels = [model(r) for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{model(r)} [{_variant(r)}, {(r.get('config') or {}).get('answer_mode')}]" for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{label} ({folder.name})" for label, folder in zip(labels, folders, strict=True)]
    # a ceiling run (attribute-hint) says so in every legend, repeated model or not
    return [
        f"{label} [{_variant(r)}]"
        if is_ceiling(recorded(r.get("config"))) and CEILING_MARK not in label
        else label
        for label, r in zip(labels, runs, strict=True)
    ]


def answer_modes(series: Sequence[Series]) -> tuple[str, list[str]]:
    """How a figure shows the runs' answer modes: ``(title suffix, legend labels)``. One mode for all
    runs (a single run too): the panels' titles say it (``, answer mode: generate``); modes that
    differ: each label that does not name its run's yet ends with it (``model-a [logprob]``)."""
    modes = {s.answer_mode for s in series}
    if len(modes) == 1:
        (mode,) = modes
        return ("" if mode is None else f", answer mode: {mode}"), [s.label for s in series]
    labels = [
        s.label if s.answer_mode is None or s.answer_mode in s.label else f"{s.label} [{s.answer_mode}]"
        for s in series
    ]
    return "", labels
