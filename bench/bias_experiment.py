"""Positive control: does the benchmark detect a bias we planted on purpose?

Two tiny LLaVA models trained on the synthetic training mode (``mmspubench.eval.tiny.train``):
one where the class co-occurs with its "home" spurious values (biased), one with the values drawn
at random (balanced). Both are evaluated with eval's own runner on synthetic benchmark items whose
planted cue agrees with the class (``aligned``) and on items where it points at another class
(``broken``). Printed: accuracy, CGLA_acc and mean CGLA_min with bootstrap 95% intervals.

Per-sample records go to ``OUT/<model>-<cue>/samples.jsonl`` (eval's format); every figure of
``OUT/summary.json`` and of the table is recomputed from them by :func:`figures`.

    python bench/bias_experiment.py --out runs/bias-experiment
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.schema import Item
from mmspubench.eval import metrics, results
from mmspubench.eval.bundled import BALANCED_MODEL, BIASED_MODEL
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult

DEFAULT_MODELS = {"biased": BIASED_MODEL, "balanced": BALANCED_MODEL}
CUES = ("aligned", "broken")
EVAL_SEED = 1
"""Seed of the evaluation items; the shipped models were trained on seed-0 training-mode items."""


def synth_items(n: int, cue: str, seed: int, image_size: int) -> list[Item]:
    """``n`` synthetic benchmark-mode items with the given cue policy, as ``schema.Item`` records (``SynthItem`` is one)."""
    from mmspubench.dataset_builder.synth.generate import generate_items

    return list(generate_items(n, seed=seed, image_size=image_size, mode="benchmark", cue=cue))


def bootstrap_mean_ci(
    values: Sequence[float], seed: int, resamples: int = metrics.BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean, drawn like ``metrics.bootstrap_ci``."""
    if len(values) == 0:
        raise ValueError("bootstrap interval of zero values is undefined")
    data = np.asarray(values, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(data), size=(resamples, len(data)))
    alpha = (1.0 - metrics.CI_LEVEL) / 2.0
    low, high = np.quantile(data[draws].mean(axis=1), [alpha, 1.0 - alpha])
    return float(low), float(high)


def figures(samples: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """One table row from per-sample records: eval's aggregates plus the interval of mean CGLA_min."""
    aggregates = results.recompute(samples, config)
    accuracy, cgla = aggregates["accuracy"], aggregates["cgla"]
    values = [float(s.cgla_min) for s in sorted(samples, key=lambda s: s.id) if s.cgla_min is not None]
    return {
        "n": accuracy["n"],
        "accuracy": accuracy["overall"],
        "accuracy_ci95": accuracy["ci95"]["overall"],
        "unparsed": accuracy["unparsed"],
        "accuracy_by_type": accuracy["by_type"],
        "cgla_acc": cgla["acc"],
        "cgla_acc_ci95": cgla["ci95"]["acc"],
        "mean_cgla_min": cgla["mean_cgla_min"],
        "mean_cgla_min_ci95": list(bootstrap_mean_ci(values, config.seed)),
    }


def run_one(model_dir: Path, items: Sequence[Item], config: RunConfig, out: Path) -> dict[str, Any]:
    """Evaluate one model on one item set with eval's runner; write samples.jsonl; its figures."""
    from mmspubench.eval.backends.transformers.loading import load_model
    from mmspubench.eval.runner import evaluate_items

    model = load_model(model_dir, batch_size=config.batch_size, scorer=config.scorer)
    out.mkdir(parents=True, exist_ok=True)
    samples: list[SampleResult] = []
    for first in range(0, len(items), config.batch_size):
        samples += evaluate_items(model, items[first : first + config.batch_size], config)
    results.write_samples_atomic(out / results.SAMPLES_NAME, samples)
    return figures(samples, config)


def _interval(value: float, ci: Sequence[float], digits: int) -> str:
    return f"{value:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The experiment's table: one row per (model, cue)."""
    lines = [
        "| model | cue | n | accuracy % [95% CI] | unparsed | CGLA_acc % [95% CI] | mean CGLA_min [95% CI] |",
        "|---|---|---:|---|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['cue']} | {r['n']} | {_interval(r['accuracy'], r['accuracy_ci95'], 1)} | "
            f"{r['unparsed']} | {_interval(r['cgla_acc'], r['cgla_acc_ci95'], 1)} | "
            f"{_interval(r['mean_cgla_min'], r['mean_cgla_min_ci95'], 3)} |"
        )
    return "\n".join(lines)


def experiment(
    models: dict[str, Path],
    out: Path,
    *,
    n: int,
    seed: int,
    image_size: int,
    answer_mode: str,
    batch_size: int,
) -> list[dict[str, Any]]:
    """Every model on every cue; writes the samples, ``summary.json`` and ``table.md`` under ``out``.

    Everything is written into a temporary sibling folder that replaces ``out`` at the end, so an
    interrupted run leaves no partial output.
    """
    return replace_folder(
        out,
        lambda folder: _run_all(
            models,
            folder,
            n=n,
            seed=seed,
            image_size=image_size,
            answer_mode=answer_mode,
            batch_size=batch_size,
        ),
    )


def _run_all(
    models: dict[str, Path],
    out: Path,
    *,
    n: int,
    seed: int,
    image_size: int,
    answer_mode: str,
    batch_size: int,
) -> list[dict[str, Any]]:
    from mmspubench.eval import prompts

    rows = []
    for cue in CUES:
        items = synth_items(n, cue, seed, image_size)
        for name, folder in models.items():
            config = RunConfig(
                model=str(folder),
                dataset=f"synthetic:{cue}:seed={seed}:n={n}",
                answer_mode=answer_mode,
                batch_size=batch_size,
                scorer="plain",
                prompts=prompts.prompt_spec(),
            )
            started = time.perf_counter()
            row = run_one(folder, items, config, out / f"{name}-{cue}")
            rows.append(
                {
                    "model": name,
                    "cue": cue,
                    "folder": f"{name}-{cue}",
                    "config": config.to_json(),
                    **row,
                    "seconds": time.perf_counter() - started,
                }
            )
            print(
                f"{name:9s} {cue:8s} acc {row['accuracy']:5.1f}  CGLA_acc {row['cgla_acc']:5.1f}  "
                f"mean CGLA_min {row['mean_cgla_min']:+.3f}",
                file=sys.stderr,
                flush=True,
            )
    results.write_json_atomic(out / "summary.json", {"rows": rows, "seed": seed, "n": n})
    (out / "table.md").write_text(markdown_table(rows) + "\n", encoding="utf-8")
    return rows


TRAIN_COMMANDS = {
    "biased": "python -m mmspubench.eval.tiny.train --out eval/assets/tiny-llava-biased --correlation 0.95 --seed 0",
    "balanced": "python -m mmspubench.eval.tiny.train --out eval/assets/tiny-llava-balanced --seed 0",
}
GENERATE_TEXT = {"option": "option's text", "letter": "option's letter"}
DATA_TEXT = {
    "biased": "planted spurious values are the true class's home values with probability 0.95 "
    "(else those of a decoy class)",
    "balanced": "planted spurious values drawn uniformly at random (synth cue `random`): they say nothing "
    "about the class",
}


def model_card(name: str, training: dict[str, Any], table: str, command: str) -> str:
    """README.md of a shipped model: what it is, how it was trained, what the experiment measured."""
    from mmspubench.eval import prompts

    config = training["config"]
    arch = config["arch"]
    losses = training["losses"]
    return f"""---
license: mit
library_name: transformers
pipeline_tag: image-text-to-text
tags: [mm-spubench, synthetic, llava, positive-control]
---

# tiny-llava-{name}

A tiny LLaVA-architecture model (CLIP-style vision tower, linear-GELU projector, Llama language
model) trained from scratch on CPU on the synthetic training mode of MM-SpuBench. It exists as a
**positive control** for the benchmark, not as a useful model: its twin `tiny-llava-{"balanced" if name == "biased" else "biased"}`
was trained with the same budget on data with the other correlation policy.

- Architecture: {arch["image_size"]} px images, {arch["patch_size"]} px patches
  ({(arch["image_size"] // arch["patch_size"]) ** 2} image tokens); vision tower {arch["vision_layers"]} layers x
  {arch["vision_hidden"]}; language model {arch["text_layers"]} layers x {arch["text_hidden"]}, {arch["heads"]} heads;
  byte-level BPE tokenizer trained on the prompt and synthetic vocabulary; chat template and prompt
  rendering identical to the bundled model's. {training["n_parameters"]:,} parameters, float32.
- Data: {config["n_items"]} synthetic training items (`mmspubench.dataset_builder.synth`, mode
  `train`, seed {config["seed"]}, {arch["image_size"]} px); {DATA_TEXT[name]}. Each item gives
  {training["n_examples"] / config["n_items"]:.2f} sequences on average: the multiple-choice prompt in
  `generate` mode (the correct {GENERATE_TEXT[config.get("generate_answer", "letter")]}, then end of turn)
  and in `logprob` mode (the letter after `Answer:`), and the CGLA prompt g(t) for each core and each
  spurious attribute followed by the class name. Loss on the continuation tokens only; prompts
  rendered and tokenized by the eval adapter.
- Training: seed {config["seed"]}, {config["steps"]} AdamW steps of {config["batch_size"]} sequences, peak
  learning rate {config["lr"]} (warm-up {config["warmup"]}, cosine to a tenth), {config["threads"]} CPU
  thread, {training["seconds"] / 60:.1f} minutes on a shared 2-core machine. Loss (nats per continuation
  token) {losses[0]:.3f} over the first {config["log_every"]} steps, {losses[-1]:.3f} over the last.

```bash
{TRAIN_COMMANDS[name]}
```

## What it shows

Evaluated with eval's runner (prompt version {prompts.PROMPT_VERSION}, `generate` answer mode, core
reduction `best`, bootstrap 95% intervals with 1000 resamples) on synthetic benchmark items, never seen
in training (seed {EVAL_SEED}), whose planted cue agrees with the class (`aligned`) or points at a decoy
class (`broken`), against its twin:

{table}

```bash
{command}
```

## Limitations

- Synthetic scenes only; ten classes; 64 px images. Nothing here transfers to real images.
- The multiple-choice answer is learned as the option's text, which eval's parser reads as that
  option; picking the letter did not emerge within the training budget (a letter-trained run stayed
  at 25 %, chance, for both models). `logprob` mode, which scores the letters, is near chance.
- In the shipped pair the balanced model barely learned to recognise the objects from pixels within
  the same budget: its accuracy is near chance on both cues, and many of its answers name a class
  that is not among the options (counted as unparsed, scored wrong). It is a control for the cue's
  effect (none, as expected), not a model that sees.
- Each synthetic core attribute text ("a red part", "a pointed top") is shared by two or three
  classes, so, as in real data, it does not name the class on its own. CGLA detects the bias on
  aligned items (see the table): for the biased model the spurious attribute explains the class
  about as well as the core one, for the balanced one the core attribute is clearly the better
  condition. On broken items the spurious attribute points at a decoy class, which raises CGLA
  rather than lowering it, so a drop of CGLA_acc on broken cues cannot show with this prompt design.
"""


def write_cards(models: dict[str, Path], table: str, command: str) -> None:
    """Write README.md (model card) into each model folder, from its training.json and the table."""
    for name, folder in models.items():
        training = json.loads((Path(folder) / "training.json").read_text(encoding="utf-8"))
        (Path(folder) / "README.md").write_text(model_card(name, training, table, command), encoding="utf-8")


def per_type_main(argv: Sequence[str]) -> int:
    """``--per-type TYPE,...``: the per-type control of ``bench/bias_per_type.py`` (same options)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bias_per_type", Path(__file__).with_name("bias_per_type.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return int(module.main(argv))


def main(argv: Sequence[str] | None = None) -> int:
    given = list(argv if argv is not None else sys.argv[1:])
    if any(a == "--per-type" or a.startswith("--per-type=") for a in given):
        return per_type_main(given)
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python bench/bias_experiment.py --out runs/bias-experiment",
    )
    parser.add_argument("--out", required=True, type=Path, help="folder for samples, summary.json, table.md")
    parser.add_argument("--n", type=int, default=450, help="items per cue (default 450: 50 per type)")
    parser.add_argument("--seed", type=int, default=EVAL_SEED, help="seed of the synthetic evaluation items")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--answer-mode", choices=("generate", "logprob"), default="generate")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--biased", type=Path, default=DEFAULT_MODELS["biased"])
    parser.add_argument("--balanced", type=Path, default=DEFAULT_MODELS["balanced"])
    parser.add_argument(
        "--write-cards",
        action="store_true",
        help="also write each model's README.md (model card) with the table",
    )
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"--n must be positive, got {args.n}")
    rows = experiment(
        {"biased": args.biased, "balanced": args.balanced},
        args.out,
        n=args.n,
        seed=args.seed,
        image_size=args.image_size,
        answer_mode=args.answer_mode,
        batch_size=args.batch_size,
    )
    table = markdown_table(rows)
    print(table)
    if args.write_cards:
        shown = [
            "python bench/bias_experiment.py",
            *(a for a in (argv if argv is not None else sys.argv[1:])),
        ]
        write_cards({"biased": args.biased, "balanced": args.balanced}, table, " ".join(shown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
