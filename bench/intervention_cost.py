"""The cost of the interventions view: a vanilla run against runs with k = 1, 2, 4 interventions.

On one profile the same items of the bundled synthetic split (224 px images) go through the
runner's ``evaluate_items`` (so the transforms are made and digested as in a run, once per item
and intervention: the transform cache is emptied before each workload), ``--answer-mode logprob``
with the fast scorer by default (``--answer-mode generate``, ``--cgla`` for the other parts).
Workloads: vanilla (``--metrics accuracy``), then ``accuracy,interventions`` with the first k
built-ins (grayscale; grayscale, blur; all four). Each intervention is one more image pass per
item (its image and question, then the four letters): a run with k of them should take about
``1 + k`` times the vanilla run. Printed per workload: items/s, the wall-time and CPU-time ratios
against vanilla next to the bound ``1.1 x (1 + k)``, the seconds spent making the intervened
images, and the tokens the language model ran (padding included) with their ratio.

All workloads run in ONE process after a warm-up call, in turn, ``--rounds`` times (default 3),
and each workload's fastest round is printed, so that the ratios compare like with like: on a
shared machine single figures vary between runs, and a burst of other jobs' load hits one round.

Examples:
  python bench/intervention_cost.py                      # realistic: 576 image tokens on the CPU
  python bench/intervention_cost.py --profile llava-7b --device cuda --dtype bfloat16 --items 64
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import score_speed
from mmspubench.eval.intervention_names import BUILTIN_NAMES

KS: tuple[int, ...] = (0, 1, 2, 4)
"""Interventions per workload (0: the vanilla run); k takes the first k built-ins."""
SLACK = 1.1
"""The bound of a run with k interventions: ``SLACK * (1 + k)`` the vanilla run's time."""


@dataclass(slots=True)
class Row:
    """One workload's measurements."""

    k: int
    """Interventions asked (0: vanilla)."""
    wall: float = 0.0
    """Seconds in ``evaluate_items`` (transforms, rendering, scoring)."""
    cpu: float = 0.0
    """CPU seconds of this process over the same span."""
    transform: float = 0.0
    """Seconds spent making and digesting the intervened images."""
    tokens: int = 0
    """Tokens the fast scorer ran (padding included), or 0 when not counted (generate mode)."""
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    """The score calls' requests (for the token count)."""


def load_items(n: int) -> list[Any]:
    """The first ``n`` items of the bundled synthetic split (repeated when it has fewer)."""
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import data

    dataset = str(default_dataset_dir())
    ds, _ = load_pinned(dataset, "test")
    items = list(data.iter_items(ds, data.item_ids(ds, None), dataset))
    return [items[i % len(items)] for i in range(n)]


def config_of(k: int, args: argparse.Namespace) -> Any:
    """The run's config for a workload with ``k`` interventions."""
    from mmspubench.eval import prompts
    from mmspubench.eval.config import RunConfig

    metrics = ("accuracy", *(("cgla",) if args.cgla else ()), *(("interventions",) if k else ()))
    return RunConfig(
        model="bench",
        dataset="bench",
        metrics=metrics,
        answer_mode=args.answer_mode,
        interventions=BUILTIN_NAMES[:k],
        max_new_tokens=8,
        prompts=prompts.prompt_spec(),
    )


class Recorder:
    """Wraps the adapter's ``score`` and the making of the intervened images, for one workload."""

    def __init__(self, adapter: Any) -> None:
        from mmspubench.eval.views.interventions import images as intervention_asks

        self.row = Row(-1)
        self._score = adapter.score
        self._shown = intervention_asks.shown_per_item
        adapter.score = self.score
        intervention_asks.shown_per_item = self.shown

    def score(self, requests: Sequence[Any]) -> list[float]:
        self.row.calls.append(tuple(requests))
        return list(self._score(requests))

    def shown(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._shown(*args)
        finally:
            self.row.transform += time.perf_counter() - start


def run_workload(adapter: Any, recorder: Recorder, items: list[Any], k: int, args: argparse.Namespace) -> Row:
    """Time ``evaluate_items`` over ``items`` in chunks of ``args.items_per_call``."""
    import torch
    from mmspubench.eval import interventions
    from mmspubench.eval.runner import evaluate_items

    config = config_of(k, args)
    interventions.CACHE.clear()  # every intervened image is made in the timed part
    recorder.row = row = Row(k)
    per_call = max(1, args.items_per_call)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    for first in range(0, len(items), per_call):
        evaluate_items(adapter, items[first : first + per_call], config)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    row.wall, row.cpu = time.perf_counter() - start, time.process_time() - cpu
    return row


def bench(args: argparse.Namespace, workdir: Path) -> list[Row]:
    """Every workload on ``args.profile``, in one process, ``args.rounds`` times in turn (each
    workload's fastest round is kept: a burst of load from other jobs hits one round, not the
    ratio); prints the table, returns the rows."""
    adapter = score_speed.load_profile(args, workdir)
    adapter.scorer = "fast"
    items = load_items(args.items)
    recorder = Recorder(adapter)
    run_workload(adapter, recorder, items[:1], max(KS), args)  # warm-up: every code path once
    rounds = [
        [run_workload(adapter, recorder, items, k, args) for k in KS] for _ in range(max(1, args.rounds))
    ]
    rows = [min(runs, key=lambda row: row.wall) for runs in zip(*rounds, strict=True)]
    if args.answer_mode == "logprob" or args.cgla:
        for row in rows:
            row.tokens = score_speed.token_counts(adapter, [c for c in row.calls if c])[1]
    print_table(rows, args)
    return rows


def print_table(rows: list[Row], args: argparse.Namespace) -> None:
    vanilla = rows[0]
    parts = f"{args.answer_mode} mode" + (" + CGLA" if args.cgla else "")
    print(
        f"\n## {args.profile}: {args.items} items, {args.items_per_call} per call, {parts}, device "
        f"{args.device}, dtype {args.dtype}, batch size {args.batch_size}, fast scorer; one run, "
        f"fastest of {max(1, args.rounds)} rounds per workload\n"
    )
    print(
        "| interventions | items/s | wall ratio | CPU ratio | bound 1.1 x (1 + k) | within | "
        "transform s | tokens | token ratio |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for row in rows:
        names = ", ".join(BUILTIN_NAMES[: row.k]) or "none (vanilla)"
        ratio, bound = row.wall / vanilla.wall, SLACK * (1 + row.k)
        tokens = f"{row.tokens} | {row.tokens / vanilla.tokens:.2f}x" if vanilla.tokens else "- | -"
        print(
            f"| {names} | {args.items / row.wall:.3f} | {ratio:.2f}x | {row.cpu / vanilla.cpu:.2f}x | "
            f"{bound:.1f}x | {'yes' if ratio <= bound else 'NO'} | {row.transform:.2f} | {tokens} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--profile", default="realistic", choices=("bundled", "realistic", "llava-7b", "tiny")
    )
    parser.add_argument("--items", type=int, default=8, help="timed items (default 8)")
    parser.add_argument("--items-per-call", type=int, default=8, help="items per evaluate call (default 8)")
    parser.add_argument("--batch-size", type=int, default=8, help="adapter batch size (default 8)")
    parser.add_argument("--answer-mode", default="logprob", choices=("logprob", "generate"))
    parser.add_argument("--cgla", action="store_true", help="score CGLA too (under each intervention)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every workload (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where built models are kept (default: temp)"
    )
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        bench(args, args.workdir or Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
