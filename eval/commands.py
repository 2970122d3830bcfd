"""Subcommands of this part (registered by ``mmspubench.cli``): ``eval`` and ``report``.

Nothing heavy is imported at module level: torch, transformers and datasets load inside handlers.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import config
from mmspubench.eval.api import default_out
from mmspubench.eval.config import parse_metrics
from mmspubench.eval.results_file import Model, Results

__all__ = ["default_out", "parse_metrics", "register", "run_eval_command", "run_report_command"]

EVAL_EPILOG = """examples:
  mmspubench eval --out runs/default              # bundled model on the bundled synthetic release
  mmspubench eval --model llava-hf/llava-onevision-qwen2-0.5b-ov-hf --dataset mmbench/MM-SpuBench \\
      --device cuda --dtype bfloat16 --out runs/llava-ov-0.5b
  mmspubench eval --model ./my-model --limit 50 --metrics cgla --core-reduction mean --out runs/try
  # rerun the same command to resume an interrupted run (same --out; finished items are skipped)
  # several GPUs: accelerate launch --multi_gpu --num_processes 4 -m mmspubench.eval.cli eval ... --out DIR
  mmspubench eval --backend vllm --model llava-hf/llava-1.5-7b-hf --tensor-parallel-size 2 --out runs/v
  mmspubench eval --backend openai --base-url http://127.0.0.1:8000/v1 --model NAME --out runs/api
"""


def _add_eval(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a vision-language model: accuracy per type and CGLA",
        description="Multiple-choice accuracy (per spurious type, Table 2) and CGLA of a vision-language "
        "model on MM-SpuBench; writes DIR/results.json and DIR/samples.jsonl, resumable.",
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    config.add_arguments(p)
    p.set_defaults(func=run_eval_command)


def _add_report(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "report",
        help="Markdown table (Table 2 layout + CGLA_acc) from results.json files",
        description="Print one Markdown row per run: model, dataset, n (items evaluated; a partial "
        "run is marked), accuracy per spurious type, Average (the mean of the per-type accuracies, "
        "as in the paper's Table 2), Overall (share of all items, each counted once), CGLA_acc; "
        "then, for runs with the interventions view, its tables (accuracy and paired change under "
        "each intervention, per type, the counterfactual gaps).",
        epilog="example:\n  mmspubench report runs/*/results.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="+", metavar="RESULTS_JSON", help="results.json files or run folders")
    p.add_argument(
        "--plot", metavar="FILE", default=None, help="also draw grouped bars per type (.png or .svg)"
    )
    p.set_defaults(func=run_report_command)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this part's subcommands to the ``mmspubench`` parser."""
    from mmspubench.eval.analysis.compare import cli as compare_cli

    _add_eval(sub)
    _add_report(sub)
    compare_cli.register(sub)


def run_report_command(args: argparse.Namespace) -> int:
    """``mmspubench report``."""
    from mmspubench.eval.analysis.report import load_for_report, markdown_table, run_names
    from mmspubench.eval.analysis.stats.tables import sections
    from mmspubench.eval.results import RESULTS_NAME
    from mmspubench.redact import strip_controls

    if args.plot is not None:
        from mmspubench.eval.analysis.plots import check_plot_output

        check_plot_output(args.results, args.plot)  # before anything is read
    paths = _finished(args.results)
    loaded = load_for_report(paths)
    table = markdown_table(loaded, run_names(paths))
    files = [Path(p) / RESULTS_NAME if Path(p).is_dir() else Path(p) for p in paths]
    table = "\n".join([table, *sections(loaded, run_names(paths), files)])
    if args.plot is not None:
        from mmspubench.eval.analysis.plots import write_report_plot

        write_report_plot(paths, args.plot)
        print(f"mmspubench report: wrote the figure {args.plot}", file=sys.stderr)
    print(strip_controls(table))  # a run's texts drive no terminal
    return 0


def _finished(paths: list[str]) -> list[str]:
    """The paths of finished runs: a run folder without its results.json yet (an eval still going,
    or stopped: ``report runs/*``) is left out with a note naming it; anything else is read as given
    (a missing or broken file stays an error). At least one run must remain."""
    from mmspubench.eval.results import MANIFEST_NAME, RESULTS_NAME, SAMPLES_NAME

    kept = []
    for raw in paths:
        folder = Path(raw)
        unfinished = (
            folder.is_dir()
            and not (folder / RESULTS_NAME).exists()
            and any((folder / name).exists() for name in (MANIFEST_NAME, SAMPLES_NAME))
        )
        if unfinished:
            print(
                f"mmspubench report: left out {raw}: an unfinished run (no {RESULTS_NAME} yet; "
                "rerun its eval with the same --out to finish it)",
                file=sys.stderr,
            )
        else:
            kept.append(raw)
    if not kept:
        raise MMSpuBenchError("no finished run to report: every run given is unfinished (no results.json)")
    return kept


def _asked(results: Results) -> set[str]:
    """The metrics the run measured: its config's, or (an older file) the sections it holds."""
    metrics = results.metrics
    return set(metrics) if metrics is not None else {m for m in config.METRICS if results.section(m)}


def _views(results: Results) -> list[str]:
    """The closing line's parts for the views the run measured, each written by its view."""
    from mmspubench.eval.views.registry import VIEWS

    parts = []
    for view in VIEWS.values():
        section = results.section(view.name)
        part = view.closing(section) if view.closing is not None and section else None
        if part:
            parts.append(part)
    return parts


_NO_INTERVAL = (float("nan"), float("nan"))


def _figures(results: Results) -> list[str]:
    """The closing line's accuracy and CGLA parts."""
    parts = []
    acc, cgla = results.accuracy, results.cgla
    if acc is not None and acc.keys:
        low, high = acc.ci95_overall or _NO_INTERVAL
        parts.append(
            f"accuracy {acc.overall:.2f}% (95% CI {low:.2f}-{high:.2f}; n={acc.n}, unparsed {acc.unparsed})"
        )
    if cgla is not None and cgla.keys:
        low, high = cgla.ci95_acc or _NO_INTERVAL
        parts.append(
            f"CGLA_acc {cgla.acc:.2f}% (95% CI {low:.2f}-{high:.2f}; n={cgla.n}; "
            f"mean CGLA_min {cgla.mean_cgla_min:.3f}; core reduction {cgla.core_reduction})"
        )
    return parts


def _summary(obj: dict[str, Any], out: Path) -> str:
    from mmspubench.eval.variants import variant_label

    results = Results.from_json(obj, out / "results.json")
    variant = variant_label(results.config)
    parts = [] if variant == "standard" else [f"prompt variant {variant}"]
    parts += _figures(results)
    parts.extend(_views(results))
    asked = _asked(results)
    # The scorer scores continuations: CGLA's class names and logprob mode's letters, nothing else.
    scored = "cgla" in asked or results.answer_mode == "logprob"
    model = results.model or Model()
    if model.scorer_used and scored:
        parts.append(f"scorer {model.scorer_used}" + _scorer_note(model))
    timing = results.timing or {}
    cgla_time = f"CGLA scoring {timing['cgla_seconds']:.1f}s, " if "cgla" in asked else ""
    over = timing.get("parts")
    over_parts = f" over {over} runs of eval (resumed)" if isinstance(over, int) and over > 1 else ""
    parts.append(f"{cgla_time}total {timing['total_seconds']:.1f}s{over_parts}")
    parts.extend(_sampling_note(obj))
    return "; ".join(parts) + f"\nresults: {out / 'results.json'}\nsamples: {out / 'samples.jsonl'}"


def _scorer_note(model: Model) -> str:
    """How the scorer's figures were checked and why fast was not used, in parentheses (or nothing)."""
    notes = []
    check = model.get("scorer_check")
    if isinstance(check, dict) and check.get("items"):
        notes.append(f"checked against plain on {check['items']} item{'s' * (check['items'] != 1)}")
    reason = model.scorer_fallback_reason
    if reason:
        notes.append(f"fast not used: {reason}")
    return f" ({'; '.join(notes)})" if notes else ""


def _sampling_note(obj: dict[str, Any]) -> list[str]:
    """The closing line's note of a run whose model refused temperature 0 (an API reasoning model)."""
    environment = obj.get("environment")
    generation = environment.get("generation") if isinstance(environment, dict) else None
    if isinstance(generation, dict) and generation.get("temperature_note"):
        return ["answers sampled at the model's default temperature, not greedy (it refuses temperature 0)"]
    return []


def _warn_truncated(results: dict[str, Any], limit: float) -> None:
    """The run's last line on stderr when more than ``--max-truncated`` of its replies were cut
    inside their reasoning (the results are written and the exit code stays 0)."""
    from mmspubench.eval.replies.summary import SECTION, truncated_line

    line = truncated_line(results.get(SECTION), limit)
    if line is not None:
        print(line, file=sys.stderr)


def run_eval_command(args: argparse.Namespace) -> int:
    """``mmspubench eval``: a thin layer over :func:`mmspubench.eval.api.run_config`."""
    from mmspubench.eval import api, distributed

    options = config.from_args(args)
    if options.out is None:
        if distributed.current_shard().world > 1:
            raise MMSpuBenchError("--out is required with several processes (they must share one run folder)")
        out = api.default_out(api.resolve_model(options))
        print(f"run folder: {out} (pass --out {out} to resume this run)", file=sys.stderr)
        options = dataclasses.replace(options, out=str(out))
    results, out = api.run_config(options, notify=lambda note: print(note, file=sys.stderr))
    if results is not None:
        print(_summary(results, out))
        if options.model is None:
            from mmspubench.eval.bundled import bundled_model_note

            print(bundled_model_note())
        _warn_truncated(results, options.max_truncated)
    return 0
