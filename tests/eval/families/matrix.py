"""The family matrix: each tiny family through ``mmspubench eval`` (generate, logprob, plain and fast CGLA).

Per family, two runs of the real command on the first items of the bundled synthetic release:
``--answer-mode generate --scorer plain`` and ``--answer-mode logprob --scorer fast``. Both score
every CGLA condition, so their samples give plain against fast per condition. While the fast run
goes, calls to the plain scorer are counted: a family on the fast scorer must make none.

``python -m tests.eval.families.matrix`` runs every family and prints the model table of docs/evaluate/models.md.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.eval.families.registry import BUILDERS, NOTES, family_dir

ITEMS = 3
"""Items of the bundled release each run evaluates."""


@dataclass(frozen=True, slots=True)
class Row:
    """What one family did in the matrix."""

    family: str
    error: str | None
    """The one-line error of ``mmspubench eval`` (exit 2), or None when both runs finished."""
    scorer_used: str | None
    """``fast`` or ``plain`` in the fast-scorer run (None after an error)."""
    fallback_reason: str | None
    """Why the fast-scorer run used the plain scorer."""
    max_diff: float | None
    """Largest |plain - fast| CGL over every condition of the scored items."""
    conditions: int
    """CGLA conditions compared."""
    spread: float | None
    """Largest spread (max - min) of one item's CGLs across its conditions: how much context moves scores."""


def eval_command(argv: list[str]) -> tuple[int, str]:
    """Exit code and stderr of ``mmspubench eval``; a failure must be exit 2 (a user error), never a crash."""
    from mmspubench.eval.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["eval", "--limit", str(ITEMS), "--no-progress", "--batch-size", "4", *argv])
    if code not in (0, 2):
        raise AssertionError(f"mmspubench eval {argv} exited {code}: {err.getvalue()[-2000:]}")
    return code, err.getvalue().strip()


def _cgls(run: Path) -> list[list[float]]:
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    return [[c["cgl"] for c in s["conditions"]] for s in samples]


def run_family(family: str, root: Path, work: Path) -> Row:
    """Build (once, under ``root``) and run ``family`` through the matrix, writing runs under ``work``."""
    from mmspubench.eval.backends.transformers import adapter as adapter_module

    folder = str(family_dir(family, root))
    code, err = eval_command(
        ["--model", folder, "--answer-mode", "generate", "--scorer", "plain", "--out", str(work / "plain")]
    )
    if code != 0:
        return Row(family, err, None, None, None, 0, None)
    seen: list[Any] = []
    real_init = adapter_module.TransformersVLM.__init__

    def record(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        seen.append(self)

    adapter_module.TransformersVLM.__init__ = record
    try:
        code, err = eval_command(
            ["--model", folder, "--answer-mode", "logprob", "--scorer", "fast", "--out", str(work / "fast")]
        )
    finally:
        adapter_module.TransformersVLM.__init__ = real_init
    if code != 0:
        return Row(family, err, None, None, None, 0, None)
    adapter = seen[-1]
    used, reason = adapter.scorer_used, adapter.scorer_fallback_reason
    plain = adapter.scorer_tally.requests.get("plain", 0)  # the check's reference passes are not counted
    if used == "fast" and plain:
        raise AssertionError(f"{family}: reported fast but the plain scorer scored {plain} requests")
    model = json.loads((work / "fast" / "results.json").read_text())["model"]
    if model["scorer_used"] != used or (used == "fast") != (model["scorer_check"] is not None):
        raise AssertionError(f"{family}: results.json records {model['scorer_used']}, the adapter ran {used}")
    by_item = _cgls(work / "plain")
    plain, fast = [x for item in by_item for x in item], [x for item in _cgls(work / "fast") for x in item]
    if len(plain) != len(fast) or not plain:
        raise AssertionError(f"{family}: {len(plain)} plain and {len(fast)} fast conditions")
    diff = max(abs(a - b) for a, b in zip(plain, fast, strict=True))
    spread = max(max(item) - min(item) for item in by_item if item)
    return Row(family, None, used, reason, diff, len(plain), spread)


def markdown(rows: list[Row]) -> str:
    """The model table of docs/evaluate/models.md (one line per family, sorted by name)."""
    lines = [
        "| family (`model_type`) | generate | logprob | CGLA | scorer | notes |",
        "|---|:-:|:-:|:-:|---|---|",
    ]
    for row in sorted(rows, key=lambda r: r.family):
        ok = "no" if row.error else "yes"
        scorer = (
            "—" if row.error else ("fast" if row.scorer_used == "fast" else f"plain: {row.fallback_reason}")
        )
        lines.append(f"| {row.family} | {ok} | {ok} | {ok} | {scorer} | {NOTES.get(row.family, '')} |")
    return "\n".join(lines)


def main() -> int:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in sorted(BUILDERS):
            rows.append(run_family(family, Path(tmp) / "models", Path(tmp) / "runs" / family))
            row = rows[-1]
            summary = row.error or (
                f"{row.scorer_used}, max |plain-fast| {row.max_diff:.2e} over {row.conditions} conditions, "
                f"CGL spread {row.spread:.3f} ({row.fallback_reason or 'no fallback'})"
            )
            print(f"{family}: {summary}", file=sys.stderr)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
