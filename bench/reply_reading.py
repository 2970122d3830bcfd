"""How the strict parser reads realistic replies: the hand-labelled fixture corpus, per kind.

    python bench/reply_reading.py [--corpus tests/eval/replies/corpus.jsonl]

Each reply is split by its family's style (mmspubench.eval.replies.reasoning), then its answer text
is read by the strict parser (mmspubench.eval.replies.parse). Prints, per kind and overall: the
count, the share the parser reads (a letter), the share whose letter (or ``None``) agrees with the
hand label ``expected`` (what a careful reader takes as the model's answer), and the share cut inside
its reasoning (``truncated``). Shares are percentages with one decimal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmspubench.eval.protocol import Generation
from mmspubench.eval.replies.parse import parse_answer
from mmspubench.eval.replies.reasoning import split_reply

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "eval" / "replies" / "corpus.jsonl"


@dataclass(frozen=True, slots=True)
class Read:
    """One corpus reply as the strict path reads it."""

    kind: str
    """The reply's labelled kind."""
    letter: str | None
    """The strict parser's letter on the split's answer text; ``None`` when unread."""
    expected: str | None
    """The hand label."""
    truncated: bool
    """The split found the reasoning cut."""


def read_rows(rows: Iterable[Mapping[str, Any]]) -> list[Read]:
    """Each row split by its style and read by the strict parser."""
    reads = []
    for row in rows:
        generation = Generation(row["text"], row.get("reasoning"), row.get("finish_reason"))
        split = split_reply(generation, row["style"])
        letter = parse_answer(split.answer_text, row["options"]) if not split.truncated else None
        reads.append(Read(row["kind"], letter, row["expected"], split.truncated))
    return reads


def figures(reads: Sequence[Read]) -> tuple[int, float, float, float]:
    """(count, % read, % agreeing with ``expected``, % truncated) of ``reads`` (not empty)."""
    if not reads:
        raise ValueError("no replies to measure")
    n = len(reads)
    read = sum(r.letter is not None for r in reads)
    agree = sum(r.letter == r.expected for r in reads)
    cut = sum(r.truncated for r in reads)
    return n, 100 * read / n, 100 * agree / n, 100 * cut / n


def table(reads: Sequence[Read]) -> list[str]:
    """The printed lines: a header, one line per kind (sorted), then ``overall``."""
    lines = [f"{'kind':<28} {'n':>4} {'read %':>7} {'agree %':>8} {'truncated %':>12}"]
    groups = sorted({r.kind for r in reads})
    for name, group in [(k, [r for r in reads if r.kind == k]) for k in groups] + [("overall", list(reads))]:
        n, read, agree, cut = figures(group)
        lines.append(f"{name:<28} {n:>4} {read:>7.1f} {agree:>8.1f} {cut:>12.1f}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    with args.corpus.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    print("\n".join(table(read_rows(rows))))


if __name__ == "__main__":
    main()
