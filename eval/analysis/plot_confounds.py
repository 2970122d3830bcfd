"""The confound panels of ``report --plot``: letter shares (circular), the gain of the image per type
(blind) and a reliability diagram (calibration), drawn for the runs that recorded them.

The data (:class:`ConfoundSeries`, :func:`confound_series`) is plain, read from results.json only:

- letter shares: ``circular.letter_share`` (A-D and unparsed, fractions of the 4N rotation answers),
  beside the gold letters' share (1/4 each by construction of the rotations);
- gain per type: ``accuracy.by_type[t] - blind.by_type[t]`` (both over the same items, so it is the
  mean paired per-item gain of the type), and overall ``blind.gain`` with ``blind.gain_ci95``;
- reliability: the non-empty ``calibration.bins`` as (mean confidence, accuracy, n), with
  ``calibration.ece`` in the legend.

A section that is missing or malformed gives no panel data (``None``), never a made-up value; a
bin counting more items than ``calibration.n`` is an edited file, refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, NUM_OPTIONS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.plot_data import (
    OVERALL,
    REPORT_GROUPS,
    Interval,
    read_interval,
    read_mapping,
    read_number,
)

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
    gain_ci95: Interval | None
    """Paired bootstrap 95% interval of the overall gain."""
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


def _gain(results: Mapping[str, Any]) -> tuple[tuple[float | None, ...] | None, Interval | None]:
    blind = read_mapping(results, "blind")
    if not blind:
        return None, None
    seen, unseen = read_mapping(read_mapping(results, "accuracy"), "by_type"), read_mapping(blind, "by_type")
    out: list[float | None] = []
    for group in REPORT_GROUPS:
        if group == OVERALL:
            out.append(read_number(blind.get("gain")))
            continue
        x, y = read_number(seen.get(group)), read_number(unseen.get(group))
        out.append(None if x is None or y is None else x - y)
    return tuple(out), read_interval(blind.get("gain_ci95"))


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


def confound_series(results: Mapping[str, Any], label: str, where: str = "results.json") -> ConfoundSeries:
    """The confound panels' data of one run's results.json (``where``: its path, for errors)."""
    gain, gain_ci = _gain(results)
    return ConfoundSeries(
        label=label,
        letter_share=_letter_share(results),
        gain=gain,
        gain_ci95=gain_ci,
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
        if field == "gain" and run.gain_ci95 is not None and values[-1] is not None:
            low, high = run.gain_ci95
            ax.errorbar(
                xs[-1],
                values[-1],
                [[max(0.0, values[-1] - low)], [max(0.0, high - values[-1])]],
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
    """Accuracy with the image minus blind accuracy per type (overall: with its paired 95% CI)."""
    _grouped(ax, series, "gain", REPORT_GROUPS)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_ylabel("percentage points")
    ax.set_title("Gain of the image per type: accuracy - blind accuracy (overall: paired bootstrap 95% CI)")


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
