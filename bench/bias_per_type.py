"""Per-type positive control: does a figure of one spurious type track a bias of that type only?

A tiny LLaVA is trained on synthetic training items whose cue is correlated with the class on the
chosen types only (``synth --mode train --correlated-types background``; the values of the other
types are drawn at random), against a balanced twin trained with the same budget (every value
random). Both are evaluated with ``mmspubench eval`` on synthetic benchmark releases whose cue
points at a decoy class (``broken``, the benchmark's default) and agrees with the class
(``aligned``); each pair of runs goes through ``mmspubench compare`` (balanced = A, cued = B).

If the benchmark's per-type figures track the planted bias, B - A concentrates on the items of
the planted types: accuracy drops there on broken items, CGLA_acc drops there on aligned items
(CGLA asks whether the core attribute explains the class better than the spurious one; on
broken items the spurious value is a decoy's, so CGLA cannot drop there, see the model cards).
The summary splits the items into "planted" (any planted type) and "other" (none).

    python bench/bias_experiment.py --per-type background --out runs/per-type
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.schema import TYPE_ABBREV, TYPE_NAMES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics
from mmspubench.eval.analysis import report
from mmspubench.eval.analysis.compare import cli as compare_cli
from mmspubench.eval.analysis.compare import paired
from mmspubench.eval.analysis.compare import runs as compare_runs
from mmspubench.eval.bundled import BALANCED_MODEL
from mmspubench.eval.tiny.train import TrainConfig

CUES = ("broken", "aligned")
EVAL_SEED = 1
"""Seed of the evaluation releases (the models were trained on seed-0 items)."""
BUDGET_FIELDS = ("n_items", "seed", "steps", "batch_size", "lr", "warmup", "weight_decay", "generate_answer")


def _budget(config: dict[str, Any]) -> dict[str, Any]:
    # Architecture fields added after a model was trained take their defaults (what it was built with).
    from dataclasses import asdict

    from mmspubench.eval.tiny.llava import Architecture

    arch = {**asdict(Architecture()), **(config.get("arch") or {})}
    return {k: config.get(k) for k in BUDGET_FIELDS} | {"arch": arch}


def shipped_balanced_matches(config: TrainConfig) -> bool:
    """Whether the shipped balanced model was trained with ``config``'s budget (then it is reused)."""
    from dataclasses import asdict

    path = Path(BALANCED_MODEL) / "training.json"
    if not path.is_file():
        return False
    shipped = json.loads(path.read_text(encoding="utf-8"))["config"]
    return shipped.get("correlation") is None and _budget(shipped) == _budget(asdict(config))


def train_models(cued: TrainConfig, out: Path, log: Any, balanced: Path | None = None) -> dict[str, Path]:
    """The balanced twin (given, shipped when the budget matches, else trained) and the cued model."""
    from mmspubench.eval.tiny.train import train

    if balanced is None and shipped_balanced_matches(cued):
        log(f"balanced: the shipped {BALANCED_MODEL} (trained with the same budget)")
        balanced = Path(BALANCED_MODEL)
    if balanced is None:
        config = replace(cued, out=str(out / "balanced"), correlation=None, correlated_types=None)
        log("training the balanced twin with the same budget")
        train(config, log=log)
        balanced = out / "balanced"
    log(f"training the model cued on {', '.join(cued.correlated_types or ())}")
    train(replace(cued, out=str(out / "cued")), log=log)
    return {"balanced": balanced, "cued": out / "cued"}


def write_releases(out: Path, n: int, image_size: int) -> dict[str, Path]:
    """One synthetic benchmark release per cue (``mmspubench synth`` layout)."""
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    paths = {}
    for cue in CUES:
        items = generate_items(n, seed=EVAL_SEED, image_size=image_size, mode="benchmark", cue=cue)
        paths[cue] = write_release(out / cue, items)
    return paths


def split_summary(a: Path, b: Path, planted: Sequence[str], seed: int) -> dict[str, Any]:
    """B - A on the items with a planted type and on the others: accuracy and CGLA_acc."""
    pairs = compare_runs.pairs(compare_runs.load_run(a), compare_runs.load_run(b))
    out: dict[str, Any] = {}
    for name, chosen in (
        ("planted", [p for p in pairs if set(p.types) & set(planted)]),
        ("other", [p for p in pairs if not set(p.types) & set(planted)]),
    ):
        row: dict[str, Any] = {"n": len(chosen)}
        for key, get in (("accuracy", "correct"), ("cgla_acc", "cgla_acc")):
            xs = [bool(getattr(p.a, get)) for p in chosen]
            ys = [bool(getattr(p.b, get)) for p in chosen]
            rate = paired.paired_rate(xs, ys, seed, metrics.BOOTSTRAP_RESAMPLES) if chosen else None
            row[key] = None if rate is None else _rate(rate)
        mins = [(p.a.cgla_min, p.b.cgla_min) for p in chosen]
        row["cgla_min"] = None
        if mins and all(x is not None and y is not None for x, y in mins):
            mean = paired.paired_mean(
                [float(x or 0.0) for x, _ in mins],
                [float(y or 0.0) for _, y in mins],
                seed,
                metrics.BOOTSTRAP_RESAMPLES,
            )
            row["cgla_min"] = {
                "a": mean.a,
                "b": mean.b,
                "difference": mean.difference,
                "ci95": list(mean.ci95),
            }
        out[name] = row
    return out


def _rate(rate: paired.PairedRate) -> dict[str, Any]:
    return {
        "a": rate.a,
        "b": rate.b,
        "difference": rate.difference,
        "ci95": list(rate.ci95),
        "only_a": rate.only_a,
        "only_b": rate.only_b,
        "p_value": rate.p_value,
    }


def split_table(summaries: dict[str, dict[str, Any]], planted: Sequence[str]) -> str:
    """Markdown: per cue, B - A (cued - balanced) on planted-type items vs the others."""
    names = "/".join(TYPE_ABBREV[t] for t in planted)
    lines = [
        "| cue | items | n | accuracy % balanced -> cued (B - A [95% CI], p) "
        "| CGLA_acc % balanced -> cued (B - A [95% CI], p) | mean CGLA_min (B - A [95% CI]) |",
        "|---|---|---:|---|---|---|",
    ]
    for cue, summary in summaries.items():
        for name in ("planted", "other"):
            row = summary[name]
            cells = []
            for key in ("accuracy", "cgla_acc"):
                r = row[key]
                cells.append(
                    "—"
                    if r is None
                    else f"{r['a']:.1f} -> {r['b']:.1f} ({r['difference']:+.1f} "
                    f"[{r['ci95'][0]:+.1f}, {r['ci95'][1]:+.1f}], p={compare_cli.format_p(r['p_value'])})"
                )
            m = row["cgla_min"]
            cells.append(
                "—"
                if m is None
                else f"{m['a']:.3f} -> {m['b']:.3f} ({m['difference']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}])"
            )
            label = f"with {names}" if name == "planted" else f"without {names}"
            lines.append(f"| {cue} | {label} | {row['n']} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _evaluate(models: dict[str, Path], releases: dict[str, Path], out: Path, answer_mode: str) -> None:
    from mmspubench.eval.api import evaluate

    for cue, release in releases.items():
        for name, model in models.items():
            evaluate(
                model, release, out / f"{name}-{cue}", answer_mode=answer_mode, progress=False, scorer="plain"
            )
            print(f"evaluated {name} on {cue}", file=sys.stderr, flush=True)


def run(
    out: Path,
    cued: TrainConfig,
    *,
    n: int,
    answer_mode: str = "generate",
    models: dict[str, Path] | None = None,
    balanced: Path | None = None,
) -> str:
    """The whole control into a new folder ``out``; the printout.

    Each piece is written atomically where it is made (a model by ``train``, a release by
    ``write_release``, a run by ``eval``), so the paths recorded in the runs are final ones.
    """
    if out.exists():
        raise MMSpuBenchError(f"{out}: already exists; pass a new --out folder")
    folder = out.resolve()
    folder.mkdir(parents=True)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    chosen = models or train_models(cued, folder / "models", log, balanced)
    releases = write_releases(folder / "data", n, cued.arch.image_size)
    _evaluate(chosen, releases, folder / "runs", answer_mode)
    return _summarise(folder, chosen, tuple(cued.correlated_types or ()))


def _summarise(folder: Path, models: dict[str, Path], planted: tuple[str, ...]) -> str:
    from mmspubench.eval.results import write_json_atomic

    parts, summaries = [], {}
    for cue in CUES:
        a, b = folder / "runs" / f"balanced-{cue}", folder / "runs" / f"cued-{cue}"
        runs = report.load_for_report([a, b])
        doc = compare_cli.comparison(a, b)
        write_json_atomic(folder / f"compare-{cue}.json", doc)
        summaries[cue] = split_summary(a, b, planted, doc["seed"])
        parts += [f"## cue {cue}: per-type table (balanced, then cued)", "", report.markdown_table(runs), ""]
        parts += [
            f"## cue {cue}: mmspubench compare runs/balanced-{cue} runs/cued-{cue}",
            "",
            compare_cli.markdown(doc),
            "",
        ]
    split = split_table(summaries, planted)
    parts = ["## planted-type items vs the others (B = cued, A = balanced)", "", split, "", *parts]
    write_json_atomic(
        folder / "summary.json",
        {"planted": list(planted), "models": {k: str(v) for k, v in models.items()}, "split": summaries},
    )
    text = "\n".join(parts).rstrip("\n")
    (folder / "report.md").write_text(text + "\n", encoding="utf-8")
    return text


def parse_types(text: str) -> tuple[str, ...]:
    """``background`` / ``BG,Col.`` -> canonical type names."""
    from mmspubench.dataset_builder.schema import ABBREV_TYPE

    names = [part.strip() for part in text.split(",") if part.strip()]
    out = [ABBREV_TYPE.get(name, name) for name in names]
    bad = [name for name in out if name not in TYPE_NAMES]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"expected spurious types among {', '.join(TYPE_NAMES)}, got {text!r}"
        )
    return tuple(t for t in TYPE_NAMES if t in out)


def main(argv: Sequence[str] | None = None) -> int:
    defaults = TrainConfig(out="", correlation=None)
    parser = argparse.ArgumentParser(
        prog="python bench/bias_experiment.py --per-type",
        description=__doc__.split("\n\n")[0],
        epilog="example: python bench/bias_experiment.py --per-type background --out runs/per-type",
    )
    parser.add_argument("--per-type", required=True, type=parse_types, metavar="TYPE,...")
    parser.add_argument("--out", required=True, type=Path, help="folder for models, data, runs, report.md")
    parser.add_argument("--n", type=int, default=450, help="evaluation items per cue (default 450)")
    parser.add_argument(
        "--correlation", type=float, default=0.95, help="cue correlation on the planted types"
    )
    parser.add_argument("--answer-mode", choices=("generate", "logprob"), default="generate")
    for name in ("n_items", "steps", "batch_size", "seed", "warmup", "log_every"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    parser.add_argument("--image-size", type=int, default=defaults.arch.image_size)
    parser.add_argument(
        "--balanced", type=Path, default=None, help="balanced twin to use instead of training one"
    )
    parser.add_argument(
        "--cued", type=Path, default=None, help="cued model already trained (with --balanced)"
    )
    args = parser.parse_args(argv)
    if args.n < 1 or (args.cued is not None and args.balanced is None):
        parser.error("--n must be positive; --cued needs --balanced")
    config = TrainConfig(
        out="",
        correlation=args.correlation,
        correlated_types=args.per_type,
        n_items=args.n_items,
        steps=args.steps,
        batch_size=args.batch_size,
        seed=args.seed,
        warmup=args.warmup,
        log_every=args.log_every,
        arch=replace(defaults.arch, image_size=args.image_size),
    )
    models = None if args.cued is None else {"balanced": args.balanced, "cued": args.cued}
    print(
        run(args.out, config, n=args.n, answer_mode=args.answer_mode, models=models, balanced=args.balanced)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
