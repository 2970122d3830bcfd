"""Subcommands of this part (registered by ``mmspubench.cli``): ``eval`` and ``report``.

Nothing heavy is imported at module level: torch, transformers and datasets load inside handlers.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError

if TYPE_CHECKING:
    from mmspubench.eval.distributed import Shard

METRIC_NAMES = ("accuracy", "cgla")

EVAL_EPILOG = """examples:
  mmspubench eval --out runs/default              # bundled model on the bundled synthetic release
  mmspubench eval --model llava-hf/llava-onevision-qwen2-0.5b-ov-hf --dataset mmbench/MM-SpuBench \\
      --device cuda --dtype bfloat16 --out runs/llava-ov-0.5b
  mmspubench eval --model ./my-model --limit 50 --metrics cgla --core-reduction mean --out runs/try
  # rerun the same command to resume an interrupted run (same --out; finished items are skipped)
  # several GPUs: accelerate launch --multi_gpu --num_processes 4 -m mmspubench.eval.cli eval ... --out DIR
"""


def parse_metrics(text: str) -> tuple[str, ...]:
    """``accuracy,cgla`` -> the metrics in canonical order; unknown names are an error."""
    names = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(names - set(METRIC_NAMES))
    if unknown or not names:
        raise MMSpuBenchError(
            f"--metrics {text!r}: expected a comma-separated subset of {','.join(METRIC_NAMES)}"
        )
    return tuple(m for m in METRIC_NAMES if m in names)


def default_out(model: str, now: datetime | None = None) -> Path:
    """``runs/<model name>-<UTC time>``, the run folder when ``--out`` is not given."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    name = Path(model).name if Path(model).exists() else model.replace("/", "__")
    return Path("runs") / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}-{stamp}"


def _add_eval(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a vision-language model: accuracy per type and CGLA",
        description="Multiple-choice accuracy (per spurious type, Table 2) and CGLA of a vision-language "
        "model on MM-SpuBench; writes DIR/results.json and DIR/samples.jsonl, resumable.",
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", help="Hub id or local folder (default: the bundled tiny random model)")
    p.add_argument(
        "--dataset", help="Hub id, built folder or raw release (default: bundled synthetic release)"
    )
    p.add_argument("--split", default="test", help="dataset split (default: test)")
    p.add_argument("--metrics", default="accuracy,cgla", help="comma-separated subset of accuracy,cgla")
    p.add_argument("--out", help="run folder (default: runs/<model>-<UTC time>); rerun with it to resume")
    p.add_argument("--limit", type=int, help="evaluate only the first N items")
    p.add_argument(
        "--answer-mode",
        choices=("generate", "logprob"),
        default="generate",
        help="generate: greedy answer read by the parser; logprob: argmax of option-letter scores",
    )
    p.add_argument(
        "--scorer",
        choices=("plain", "fast"),
        default="fast",
        help="continuation scorer: fast shares the image and prompt prefix across conditions",
    )
    p.add_argument("--batch-size", type=int, default=8, help="items per generate call, sequences per forward")
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1, mps (default: cpu)")
    p.add_argument("--dtype", default="float32", help="float32, bfloat16 or float16 (default: float32)")
    p.add_argument(
        "--core-reduction",
        choices=("best", "mean", "first"),
        default="best",
        help="one CGL from several core attributes: best (max, default), mean, first",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default: 0)")
    p.add_argument("--max-new-tokens", type=int, default=16, help="answer length in generate mode")
    p.add_argument("--trust-remote-code", action="store_true", help="allow a model's own code to run")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_eval_command)


def _add_report(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "report",
        help="Markdown table (Table 2 layout + CGLA_acc) from results.json files",
        description="Print one Markdown row per run: accuracy per spurious type, Average (overall), CGLA_acc.",
        epilog="example:\n  mmspubench report runs/*/results.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="+", metavar="RESULTS_JSON", help="results.json files or run folders")
    p.set_defaults(func=run_report_command)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this part's subcommands to the ``mmspubench`` parser."""
    _add_eval(sub)
    _add_report(sub)


def run_report_command(args: argparse.Namespace) -> int:
    """``mmspubench report``."""
    from mmspubench.eval.report import load_for_report, markdown_table

    print(markdown_table(load_for_report(args.results)))
    return 0


def _summary(results: dict[str, Any], out: Path) -> str:
    parts = []
    acc = results.get("accuracy")
    if acc:
        low, high = acc["ci95"]["overall"]
        parts.append(
            f"accuracy {acc['overall']:.2f}% (95% CI {low:.2f}-{high:.2f}; n={acc['n']}, "
            f"unparsed {acc['unparsed']})"
        )
    cgla = results.get("cgla")
    if cgla:
        parts.append(
            f"CGLA_acc {cgla['acc']:.2f}% (mean CGLA_min {cgla['mean_cgla_min']:.3f}; "
            f"core reduction {cgla['core_reduction']})"
        )
    parts.append(
        f"CGLA scoring {results['timing']['cgla_seconds']:.1f}s, total {results['timing']['total_seconds']:.1f}s"
    )
    return "; ".join(parts) + f"\nresults: {out / 'results.json'}\nsamples: {out / 'samples.jsonl'}"


def run_eval_command(args: argparse.Namespace) -> int:
    """``mmspubench eval``: check the cheap options first, then load the data, the model and run."""
    from mmspubench.eval import distributed
    from mmspubench.eval.data import check_limit

    metrics = parse_metrics(args.metrics)
    check_limit(args.limit)
    shard = distributed.current_shard()
    if args.out is None and shard.world > 1:
        raise MMSpuBenchError("--out is required with several processes (they must share one run folder)")
    if args.max_new_tokens <= 0:
        raise MMSpuBenchError(f"--max-new-tokens must be positive, got {args.max_new_tokens}")
    try:
        results, out = _evaluate(args, metrics, shard)
    finally:
        distributed.finish(shard)
    if results is not None:
        print(_summary(results, out))
        if args.model is None:
            from mmspubench.eval.bundled import bundled_model_note

            print(bundled_model_note())
    return 0


def _evaluate(
    args: argparse.Namespace, metrics: tuple[str, ...], shard: Shard
) -> tuple[dict[str, Any] | None, Path]:
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import distributed, prompts
    from mmspubench.eval.loading import load_model
    from mmspubench.eval.records import RunConfig
    from mmspubench.eval.runner import run_eval

    if args.dataset is None:
        from mmspubench.dataset_builder.defaults import default_dataset_dir

        dataset = str(default_dataset_dir())
    else:
        dataset = args.dataset
    ds, dataset_info = load_pinned(dataset, args.split)
    if args.model is None:
        from mmspubench.eval.bundled import bundled_model_dir, bundled_model_note

        model = str(bundled_model_dir())
        if shard.is_main:
            print(bundled_model_note(), file=sys.stderr)
    else:
        model = args.model
    out = Path(args.out) if args.out else default_out(model)
    if args.out is None:
        print(f"run folder: {out} (pass --out {out} to resume this run)", file=sys.stderr)
    config = RunConfig(
        model=model,
        dataset=dataset,
        split=args.split,
        metrics=metrics,
        answer_mode=args.answer_mode,
        scorer=args.scorer,
        batch_size=args.batch_size,
        device=args.device,
        dtype=args.dtype,
        limit=args.limit,
        core_reduction=args.core_reduction,
        seed=args.seed,
        max_new_tokens=args.max_new_tokens,
        prompts=prompts.prompt_spec(),
    )

    def load() -> Any:
        return load_model(
            model,
            device=distributed.device_for(args.device, shard),
            dtype=args.dtype,
            batch_size=args.batch_size,
            scorer=args.scorer,
            trust_remote_code=args.trust_remote_code,
        )

    results = run_eval(load, ds, dataset_info, config, out, shard=shard, progress=not args.no_progress)
    return results, out
