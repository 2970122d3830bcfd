"""The confound panels of ``report --plot``: letter shares (circular), the gain of the image per type
(blind) and a reliability diagram (calibration), drawn for the runs that recorded them.

The data (:class:`ConfoundSeries`, :func:`confound_series`) is plain, read from results.json only:

- letter shares: ``circular.letter_share`` (A-D and unparsed, fractions of the 4N rotation answers),
  beside the gold letters' share (1/4 each by construction of the rotations);
- gain per type: ``accuracy.by_type[t] - blind.by_type[t]`` (both over the same items, so it is the
  mean paired per-item gain of the type), and overall ``blind.gain`` with ``blind.gain_ci95``; each
  type's paired bootstrap 95% interval from the run's samples.jsonl (the run's seed, as results.json's
  overall one), and its number of items (``blind.n_by_type``) under its tick;
- reliability: the non-empty ``calibration.bins`` as (mean confidence, accuracy, n), with
  ``calibration.ece`` in the legend.

A section that is missing or malformed gives no panel data (``None``), never a made-up value; a
bin counting more items than ``calibration.n`` is an edited file, refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, NUM_OPTIONS, SPURIOUS_TYPES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.plot_data import (
    OVERALL,
    REPORT_GROUPS,
    Interval,
    count_ticks,
    read_count,
    read_interval,
    read_mapping,
    read_number,
    run_seed,
)
from mmspubench.eval.records import SampleResult

SHARE_KEYS: tuple[str, ...] = (*ANSWER_LETTERS, "unparsed")
"""Bars of the letter-share panel."""
GOLD_SHARE = 1.0 / NUM_OPTIONS
"""Share of each letter among the gold letters of the four rotations."""


@dataclass(frozen=True, slots=True)
class ConfoundSeries:
    """One run's confound panels' data (``None``: the run did not record that view)."""

    label: str
    """Legend text (as the run's accuracy bars)."""
    letter_share: tuple[float | None, ...] | None
    """Share per :data:`SHARE_KEYS` of the rotation answers."""
    gain: tuple[float | None, ...] | None
    """Gain of the image in percentage points per group of :data:`REPORT_GROUPS`."""
    gain_ci95: tuple[Interval | None, ...] | None
    """Paired bootstrap 95% interval of the gain per group of :data:`REPORT_GROUPS` (overall: from
    results.json; per type: from the samples, ``None`` without them)."""
    gain_n: tuple[int | None, ...] | None
    """Items per group of :data:`REPORT_GROUPS` (``blind.n_by_type``, ``blind.n``)."""
    reliability: tuple[tuple[float, float, int], ...] | None
    """(mean confidence, accuracy, n) of each non-empty confidence bin."""
    ece: float | None
    """The run's ECE (fraction)."""

    @property
    def empty(self) -> bool:
        """The run recorded none of the views."""
        return self.letter_share is None and self.gain is None and self.reliability is None


def _letter_share(results: Mapping[str, Any]) -> tuple[float | None, ...] | None:
    share = read_mapping(read_mapping(results, "circular"), "letter_share")
    return tuple(read_number(share.get(k)) for k in SHARE_KEYS) if share else None


def _gain(
    results: Mapping[str, Any], samples: Sequence[SampleResult] | None
) -> tuple[
    tuple[float | None, ...] | None, tuple[Interval | None, ...] | None, tuple[int | None, ...] | None
]:
    blind = read_mapping(results, "blind")
    if not blind:
        return None, None, None
    seen, unseen = read_mapping(read_mapping(results, "accuracy"), "by_type"), read_mapping(blind, "by_type")
    out: list[float | None] = []
    for group in REPORT_GROUPS:
        if group == OVERALL:
            out.append(read_number(blind.get("gain")))
            continue
        x, y = read_number(seen.get(group)), read_number(unseen.get(group))
        out.append(None if x is None or y is None else x - y)
    intervals = {**_type_intervals(results, samples), OVERALL: read_interval(blind.get("gain_ci95"))}
    counts = {**read_mapping(blind, "n_by_type"), OVERALL: blind.get("n")}
    return (
        tuple(out),
        tuple(intervals.get(g) for g in REPORT_GROUPS),
        tuple(read_count(counts.get(g)) for g in REPORT_GROUPS),
    )


def _type_intervals(
    results: Mapping[str, Any], samples: Sequence[SampleResult] | None
) -> dict[str, Interval]:
    """Each type's paired bootstrap 95% interval of the gain (with minus without the image, points),
    from the samples that hold both answers, with the run's seed; empty without samples."""
    from mmspubench.eval.views.confounds.paired import paired_bootstrap_ci

    seed = run_seed(results)
    pairs = [
        (s.types, s.correct, s.blind.correct) for s in samples or () if s.blind and s.correct is not None
    ]
    out = {}
    for spurious in SPURIOUS_TYPES:
        here = [(100.0 * seen, 100.0 * unseen) for types, seen, unseen in pairs if spurious.name in types]
        if here:
            with_image, without = zip(*here, strict=True)
            out[spurious.abbrev] = paired_bootstrap_ci(without, with_image, seed)
    return out


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _reliability(results: Mapping[str, Any], where: str) -> tuple[tuple[float, float, int], ...] | None:
    section = read_mapping(results, "calibration")
    bins, total = section.get("bins"), section.get("n")
    if not isinstance(bins, list) or not _count(total):
        return None
    points = []
    for i, b in enumerate(bins):
        if not isinstance(b, Mapping):
            return None
        conf, acc, n = read_number(b.get("confidence")), read_number(b.get("accuracy")), b.get("n")
        if _count(n) and n > total:  # more items in one bin than the run calibrated: an edited file
            text = str(n) if len(str(n)) <= 20 else f"{str(n)[:20]}... ({len(str(n))} digits)"
            raise MMSpuBenchError(
                f"{where}: field 'calibration.bins[{i}].n': {text} items in one bin; expected 0 to "
                f"{total} (calibration.n)"
            )
        if conf is not None and acc is not None and _count(n) and n > 0:
            points.append((conf, acc, n))
    return tuple(points)


def confound_series(
    results: Mapping[str, Any],
    label: str,
    where: str = "results.json",
    samples: Sequence[SampleResult] | None = None,
) -> ConfoundSeries:
    """The confound panels' data of one run's results.json (``where``: its path, for errors) and,
    for the per-type intervals of the gain, its samples."""
    gain, gain_ci, gain_n = _gain(results, samples)
    return ConfoundSeries(
        label=label,
        letter_share=_letter_share(results),
        gain=gain,
        gain_ci95=gain_ci,
        gain_n=gain_n,
        reliability=_reliability(results, where),
        ece=read_number(read_mapping(results, "calibration").get("ece")),
    )


def panels(series: Sequence[ConfoundSeries]) -> list[str]:
    """The confound panels to draw, in order: those at least one run has data for."""
    wanted = [
        ("letter_share", any(s.letter_share is not None for s in series)),
        ("gain", any(s.gain is not None for s in series)),
        ("reliability", any(s.reliability is not None for s in series)),
    ]
    return [name for name, present in wanted if present]


def _grouped(ax: Any, series: Sequence[ConfoundSeries], field: str, ticks: Sequence[str]) -> None:
    """Grouped bars of ``field`` (one colour per run, the colours of the accuracy panels)."""
    from mmspubench.eval.analysis.plots import mark_zeros

    width = 0.8 / len(series)
    for k, run in enumerate(series):
        values = getattr(run, field)
        if values is None:
            continue
        xs = [p - 0.4 + width * (k + 0.5) for p in range(len(ticks))]
        ax.bar(xs, [0.0 if v is None else v for v in values], width, label=run.label, color=f"C{k % 10}")
        for x, v in zip(xs, values, strict=True):
            if v is None:
                ax.text(x, 0.0, "—", ha="center", va="bottom", fontsize=7)
        mark_zeros(ax, xs, values, width, f"C{k % 10}")
        if field == "gain" and run.gain_ci95 is not None:
            for x, v, ci in zip(xs, values, run.gain_ci95, strict=True):
                if v is not None and ci is not None:
                    ax.errorbar(
                        x,
                        v,
                        [[max(0.0, v - ci[0])], [max(0.0, ci[1] - v)]],
                        color="black",
                        capsize=2,
                        linewidth=0.8,
                    )
    ax.set_xticks(range(len(ticks)), list(ticks))
    ax.grid(axis="y", alpha=0.3)


def draw_letter_share(ax: Any, series: Sequence[ConfoundSeries]) -> None:
    """Share of each letter among the rotation answers, beside the gold letters' share."""
    _grouped(ax, series, "letter_share", SHARE_KEYS)
    ax.axhline(GOLD_SHARE, color="0.35", linestyle="--", linewidth=0.9)
    ax.text(1.005, GOLD_SHARE, "gold\n1/4", transform=ax.get_yaxis_transform(), va="center", fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of answers")
    ax.set_title("Letter shares over the four rotations (circular)")


def draw_gain(ax: Any, series: Sequence[ConfoundSeries]) -> None:
    """Accuracy with the image minus blind accuracy per type, each with its paired 95% CI and its
    items under the tick (as the accuracy panels: one n, or one per run)."""
    counts = [s.gain_n or (None,) * len(REPORT_GROUPS) for s in series if s.gain is not None]
    _grouped(ax, series, "gain", count_ticks(counts))
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_ylabel("percentage points")
    ax.set_title("Gain of the image per type: accuracy - blind accuracy (paired bootstrap 95% CIs)")


def draw_reliability(ax: Any, series: Sequence[ConfoundSeries]) -> None:
    """Accuracy against mean confidence per bin (marker area: items), with the diagonal."""
    ax.plot([0, 1], [0, 1], color="0.35", linestyle="--", linewidth=0.9)
    for k, run in enumerate(series):
        if not run.reliability:
            continue
        conf, acc, n = zip(*run.reliability, strict=True)
        ece = "" if run.ece is None else f" (ECE {run.ece:.3f})"
        ax.plot(conf, acc, marker="o", color=f"C{k % 10}", linewidth=1.0, label=run.label + ece)
        # Area by the bin's share of the run's largest bin: exact for counts of any size (a
        # count read from a file may be huge; Python divides integers without overflow).
        biggest = max(n)
        ax.scatter(conf, acc, s=[12 + 240 * v / biggest for v in n], color=f"C{k % 10}", alpha=0.4)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("confidence (max option probability)")
    ax.set_ylabel("accuracy")
    ax.set_title("Reliability diagram (15 equal-width bins; calibration)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)


DRAW = {"letter_share": draw_letter_share, "gain": draw_gain, "reliability": draw_reliability}
"""Panel name -> its drawing function."""
