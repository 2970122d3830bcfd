"""CGLA view: the conditional generation likelihood (CGL) of the class name under each attribute.

Input is one per-sample record in the ``samples.jsonl`` format of docs/DESIGN.md ("Result files"):
``class_name``, ``conditions`` (``attribute``, ``kind``, ``prompt``, ``continuation``, ``cgl``),
``cgla_min`` and ``cgla_acc``. The same record comes from a results run or from a live run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import code_block, escape_cell

CORE, SPURIOUS, WINNER = "core", "spurious", "winning spurious (sets CGLA_min)"
BEST_CORE = "best core"
COLOR_MAP: dict[str, str] = {CORE: "#2563eb", BEST_CORE: "#1e3a8a", SPURIOUS: "#f59e0b", WINNER: "#dc2626"}
"""Core conditions in blue, spurious in amber; the pair that sets CGLA_min in the dark shades."""
CGL_COLUMNS: tuple[str, ...] = ("condition", "attribute", "kind", "cgl", "role")


def _conditions(sample: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    conditions = sample.get("conditions")
    if not conditions:
        raise MMSpuBenchError(
            f"item {sample.get('id')!r} has no CGLA conditions (was the run made with --metrics cgla?)"
        )
    for cond in conditions:
        cgl = cond.get("cgl")
        if not isinstance(cgl, (int, float)) or not math.isfinite(cgl):
            raise MMSpuBenchError(
                f"item {sample.get('id')!r}: condition {cond.get('attribute')!r} has no finite cgl"
            )
        if cond.get("kind") not in (CORE, SPURIOUS):
            raise MMSpuBenchError(
                f"item {sample.get('id')!r}: condition kind {cond.get('kind')!r} is not core/spurious"
            )
    kinds = {c["kind"] for c in conditions}
    if kinds != {CORE, SPURIOUS}:
        raise MMSpuBenchError(f"item {sample.get('id')!r} needs at least one core and one spurious condition")
    return list(conditions)


def cgl_frame(sample: Mapping[str, Any]) -> pd.DataFrame:
    """One bar per condition: ``condition`` label, ``attribute``, ``kind``, ``cgl`` and colour ``role``.

    The winning spurious attribute is the spurious condition with the highest CGL (it gives the
    minimum of CGLA over spurious attributes); the best core is the core condition with the highest CGL.
    """
    conditions = _conditions(sample)
    best_core = max((c for c in conditions if c["kind"] == CORE), key=lambda c: c["cgl"])
    winner = max((c for c in conditions if c["kind"] == SPURIOUS), key=lambda c: c["cgl"])
    rows = []
    for i, cond in enumerate(conditions):
        role = cond["kind"]
        if cond is winner:
            role = WINNER
        elif cond is best_core:
            role = BEST_CORE
        # The index keeps x labels unique when an attribute text appears twice.
        label = f"{i + 1}. {cond['kind']}: {cond['attribute']}"
        rows.append((label, cond["attribute"], cond["kind"], float(cond["cgl"]), role))
    return pd.DataFrame(rows, columns=list(CGL_COLUMNS))


def cgla_summary(sample: Mapping[str, Any]) -> dict[str, Any]:
    """CGLA_min, CGLA_acc, the winning spurious attribute and the core reference of one record."""
    frame = cgl_frame(sample)
    winner = frame[frame["role"] == WINNER].iloc[0]
    best_core = frame[frame["kind"] == CORE].sort_values("cgl", ascending=False).iloc[0]
    recorded = sample.get("cgla_min")
    cgla_min = (
        float(recorded) if isinstance(recorded, (int, float)) else float(best_core["cgl"] - winner["cgl"])
    )
    return {
        "id": sample.get("id"),
        "class_name": sample.get("class_name"),
        "cgla_min": cgla_min,
        "cgla_acc": int(cgla_min > 0),
        "winning_spurious": str(winner["attribute"]),
        "winning_spurious_cgl": float(winner["cgl"]),
        "best_core": str(best_core["attribute"]),
        "best_core_cgl": float(best_core["cgl"]),
    }


def cgla_markdown(sample: Mapping[str, Any]) -> str:
    """A sentence-level reading of the chart."""
    s = cgla_summary(sample)
    verdict = (
        "the core attribute is the better condition (CGLA_acc = 1)"
        if s["cgla_acc"]
        else "a spurious attribute is at least as good a condition (CGLA_acc = 0)"
    )
    e = escape_cell  # every text of the record is a run's (or a visitor's): never markup
    return (
        f"**CGLA_min = {s['cgla_min']:.4f}**: {verdict}.\n\n"
        f"Class name scored: {e(str(s['class_name']))} · best core: *{e(s['best_core'])}* "
        f"(CGL {s['best_core_cgl']:.4f}) · winning spurious: **{e(s['winning_spurious'])}** "
        f"(CGL {s['winning_spurious_cgl']:.4f})"
    )


def prompts_markdown(sample: Mapping[str, Any]) -> str:
    """The exact prompt and continuation of every condition, in code blocks."""
    parts = []
    for cond in _conditions(sample):
        prompt = str(cond.get("prompt", ""))
        continuation = str(cond.get("continuation", ""))
        parts.append(
            f"#### {cond['kind']}: {escape_cell(str(cond['attribute']))} (CGL {float(cond['cgl']):.4f})\n\n"
            f"Prompt:\n\n{code_block(prompt)}\n\nContinuation scored:\n\n{code_block(continuation)}\n"
        )
    return "\n".join(parts)


def read_samples(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a finished ``samples.jsonl``, by item id (a later line for an id wins), read
    with the evaluator's own reader (``mmspubench.eval.results``); refused when the run of the
    results.json beside it did not write them (their run stamps). A file with no results.json
    beside it (a state made by hand) has no run to check against and is read as it is."""
    from mmspubench.eval.results import RESULTS_NAME, read_finished_samples, read_results
    from mmspubench.eval.run_stamp import check_samples_beside

    samples = read_finished_samples(path)
    results = path.parent / RESULTS_NAME
    if results.is_file():
        check_samples_beside(path, read_results(results), results)
    return {sample.id: sample.to_json() for sample in samples}


def cgl_axis_limits(frame: pd.DataFrame) -> list[float]:
    """Y-axis range framing the CGLs with a margin: the differences that CGLA measures stay visible.

    CGLs of one item often differ by hundredths of a nat while all lie far below zero; an axis
    starting at zero would flatten exactly the differences the chart is for.
    """
    low, high = float(frame["cgl"].min()), float(frame["cgl"].max())
    margin = max(0.1 * (high - low), 1e-3)
    return [low - margin, min(high + margin, 0.0) if high <= 0 else high + margin]
