"""How the strict parser reads realistic replies: the hand-labelled fixture corpus, per kind.

    python bench/reply_reading.py [--corpus tests/eval/replies/corpus.jsonl]
    python bench/reply_reading.py --judge standin
    python bench/reply_reading.py --judge-model NAME --judge-base-url URL [--judge-api-key-env VAR]

Each reply is split by its family's style (mmspubench.eval.replies.reasoning), then its answer text
is read by the strict parser (mmspubench.eval.replies.parse). Prints, per kind and overall: the
count, the share the parser reads (a letter), the share whose letter (or ``None``) agrees with the
hand label ``expected`` (what a careful reader takes as the model's answer), and the share cut inside
its reasoning (``truncated``). Shares are percentages with one decimal.

With a judge (``--extract judge``'s path, mmspubench.eval.replies.judge), every reply the parser
leaves unread and that is not truncated is asked of the judge, as a run asks it (the corpus holds no
questions: each is asked with :data:`QUESTION`); the table then also has the share the judge reads
and the agreement of parser + judge. ``--judge standin`` is tests/eval/standin_judge.py on
127.0.0.1: a RULE-BASED STAND-IN, NOT A REAL LLM JUDGE (its figures measure the path and its rules);
``--judge-model``/``--judge-base-url`` measure a real judge on its server.
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

from mmspubench.eval.backends.api_key import DEFAULT_KEY_ENV
from mmspubench.eval.protocol import Generation
from mmspubench.eval.replies.judge import JudgeClient
from mmspubench.eval.replies.parse import parse_answer
from mmspubench.eval.replies.reading import Judge
from mmspubench.eval.replies.reasoning import split_reply

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "eval" / "replies" / "corpus.jsonl"
QUESTION = "Which option does the image show?"
"""The question every corpus reply is judged under (the corpus records none)."""
STANDIN_NOTE = (
    "judge: the rule-based stand-in of tests/eval/standin_judge.py on 127.0.0.1, not a real LLM "
    "(its figures measure the judge path and the stand-in's rules, not a model)"
)


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
    judged: str | None = None
    """The judge's letter for a reply the parser left unread (not truncated); ``None`` otherwise."""


def read_rows(rows: Iterable[Mapping[str, Any]], judge: Judge | None = None) -> list[Read]:
    """Each row split by its style and read by the strict parser, then by ``judge`` where given
    and the parser read nothing (a truncated reply is never read)."""
    reads = []
    for row in rows:
        generation = Generation(row["text"], row.get("reasoning"), row.get("finish_reason"))
        split = split_reply(generation, row["style"])
        letter = parse_answer(split.answer_text, row["options"]) if not split.truncated else None
        judged = None
        if judge is not None and letter is None and not split.truncated:
            judged = judge.read(QUESTION, row["options"], split.answer_text)
        reads.append(Read(row["kind"], letter, row["expected"], split.truncated, judged))
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


def judge_figures(reads: Sequence[Read]) -> tuple[int, float, float, float, float]:
    """(count, % read by the parser, % read by the judge, % parser alone agreeing, % parser +
    judge agreeing with ``expected``) of ``reads`` (not empty)."""
    if not reads:
        raise ValueError("no replies to measure")
    n = len(reads)
    parsed = sum(r.letter is not None for r in reads)
    judged = sum(r.judged is not None for r in reads)
    alone = sum(r.letter == r.expected for r in reads)
    both = sum((r.letter or r.judged) == r.expected for r in reads)
    return n, 100 * parsed / n, 100 * judged / n, 100 * alone / n, 100 * both / n


def judge_table(reads: Sequence[Read]) -> list[str]:
    """The lines with a judge: a header, one line per kind (sorted), then ``overall``."""
    head = (
        f"{'kind':<28} {'n':>4} {'parser %':>9} {'judge %':>8} {'agree parser %':>15} {'agree +judge %':>15}"
    )
    lines = [head]
    groups = sorted({r.kind for r in reads})
    for name, group in [(k, [r for r in reads if r.kind == k]) for k in groups] + [("overall", list(reads))]:
        n, parsed, judged, alone, both = judge_figures(group)
        lines.append(f"{name:<28} {n:>4} {parsed:>9.1f} {judged:>8.1f} {alone:>15.1f} {both:>15.1f}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--judge", choices=("standin",), help="the rule-based stand-in judge (not an LLM)")
    parser.add_argument("--judge-model", help="a real judge: its model name on --judge-base-url")
    parser.add_argument("--judge-base-url", help="a real judge: its OpenAI-compatible server")
    parser.add_argument("--judge-api-key-env", default=DEFAULT_KEY_ENV, help="variable with its key, or none")
    args = parser.parse_args(argv)
    with args.corpus.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    if args.judge == "standin":
        from tests.eval.standin_judge import judge_server

        with judge_server() as server:
            reads = read_rows(rows, JudgeClient("standin", server.base_url, "none"))
        print(STANDIN_NOTE)
        print("\n".join(judge_table(reads)))
    elif args.judge_model and args.judge_base_url:
        judge = JudgeClient(args.judge_model, args.judge_base_url, args.judge_api_key_env)
        print(f"judge: {judge.identity['model']} at {judge.identity['base_url']}")
        print("\n".join(judge_table(read_rows(rows, judge))))
    else:
        print("\n".join(table(read_rows(rows))))


if __name__ == "__main__":
    main()
