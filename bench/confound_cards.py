"""Model cards (README.md) of the planted-confound controls, from their training.json and a table.

    python bench/confound_cards.py --model eval/assets/tiny-llava-letter-bias --table runs/x/letter.md \
        --command "python bench/confound_controls.py --out runs/x --accuracy-only"
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def train_command(config: Mapping[str, Any]) -> str:
    """The ``mmspubench.eval.tiny.train`` command that reproduces ``config`` (non-default options only)."""
    parts = ["python -m mmspubench.eval.tiny.train", f"--out {config['out']}", f"--seed {config['seed']}"]
    if config.get("correlation") is not None:
        parts.append(f"--correlation {config['correlation']}")
    if config.get("letter_bias") is not None:
        letter, share = config["letter_bias"]
        parts.append(f"--letter-bias {letter}:{share}")
    if config.get("text_prior_types") is not None:
        parts.append("--text-prior-types " + ",".join(config["text_prior_types"]))
    if config["steps"] != TWIN_STEPS:
        parts.append(f"--steps {config['steps']}")
    if config.get("reasoning"):
        parts.append("--reasoning")
    return " ".join(parts)


def planting_text(config: Mapping[str, Any]) -> str:
    """What was planted, in words."""
    said = ["planted spurious values drawn uniformly at random (synth cue `random`)"]
    if config.get("letter_bias") is not None:
        letter, share = config["letter_bias"]
        said.append(
            f"a **letter bias**: the gold answer at letter {letter} with probability {share}, else at one "
            "of the other three letters uniformly (synth `--letter-bias`)"
        )
    if config.get("text_prior_types") is not None:
        types = ", ".join(f"`{t}`" for t in config["text_prior_types"])
        said.append(
            f"a **text prior**: every item with a spurious type among {types} names its class in the "
            'question ("... Its label reads: boat."; synth `--text-prior-types`)'
        )
    return "; ".join(said)


TWIN_STEPS = 2000
"""Optimiser steps of the shipped balanced twin."""


def budget_text(config: Mapping[str, Any]) -> str:
    """How the control's budget compares with its twin's."""
    if config["steps"] == TWIN_STEPS:
        return "same architecture, data size, seed and budget"
    return (
        f"same architecture, data size and seed, but {config['steps']} optimiser steps instead of the "
        f"twin's {TWIN_STEPS}"
    )


def training_text(training: Mapping[str, Any]) -> str:
    """A card's training line and the command that made the model (every control's card)."""
    config, losses = training["config"], training["losses"]
    return f"""- Training: {config["steps"]} AdamW steps of {config["batch_size"]} sequences, peak learning rate {config["lr"]},
  {config["threads"]} CPU thread, {training["seconds"] / 60:.1f} minutes on a shared 2-core machine; loss
  {losses[0]:.3f} over the first {config["log_every"]} steps, {losses[-1]:.3f} over the last.

```bash
{train_command(config)}
```"""


def model_card(name: str, training: Mapping[str, Any], table: str, command: str) -> str:
    """README.md of one control model."""
    config, arch = training["config"], training["config"]["arch"]
    return f"""---
license: mit
library_name: transformers
pipeline_tag: image-text-to-text
tags: [mm-spubench, synthetic, llava, positive-control]
---

# {name}

A tiny LLaVA-architecture model trained from scratch on CPU on the synthetic training mode of
MM-SpuBench, like the bundled `tiny-llava-balanced` ({budget_text(config)}) but with one
confound planted in its training data. It is a **positive control** for the
confound views of `mmspubench eval` (circular evaluation, the blind baseline), not a useful model.

- Architecture: {arch["image_size"]} px images, {arch["patch_size"]} px patches; vision tower
  {arch["vision_layers"]} x {arch["vision_hidden"]}; language model {arch["text_layers"]} x {arch["text_hidden"]},
  {arch["heads"]} heads; {training["n_parameters"]:,} parameters, float32.
- Data: {config["n_items"]} synthetic training items (mode `train`, seed {config["seed"]}); {planting_text(config)}.
  Each item gives the multiple-choice prompt in `generate` mode (the correct option's text) and in
  `logprob` mode (the letter after `Answer:`), and the CGLA prompts.
{training_text(training)}

## What it shows

{table}

```bash
{command}
```

## Limitations

- Synthetic scenes only; ten classes; 64 px images. Nothing here transfers to real images.
- Like its balanced twin, it answers `generate` prompts with an option's text, not its letter
  (picking the letter did not emerge within the budget), and it barely recognises the objects from
  pixels: read its figures as a control for the planted confound, not as a model that sees. Which
  answer mode shows the confound is measured, not assumed: see "What it shows".
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a control model's README.md (model card).")
    parser.add_argument("--model", required=True, type=Path, help="model folder holding training.json")
    parser.add_argument("--table", required=True, type=Path, help="Markdown file: the measured figures")
    parser.add_argument("--command", required=True, help="the command that printed the figures")
    args = parser.parse_args(argv)
    training = json.loads((args.model / "training.json").read_text(encoding="utf-8"))
    table = args.table.read_text(encoding="utf-8").strip()
    card = model_card(args.model.name, training, table, args.command)
    (args.model / "README.md").write_text(card, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
