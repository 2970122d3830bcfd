"""The thinking control: is a reply's reasoning block set aside, and is a cut one never scored?

    python bench/thinking_control.py --out runs/thinking-control
    python bench/thinking_control.py --out runs/thinking-control --write-card

``eval/assets/tiny-llava-thinking`` (``python -m mmspubench.eval.tiny.train ... --reasoning``)
writes ``<think>\\nAnswer: (A)\\nNo, look again.\\n</think>\\n\\n`` and then the option's text: its
reasoning holds a DECOY, a letter other than the gold one (``mmspubench.eval.tiny.examples``).
It is run with ``mmspubench eval --thinking on`` on the bundled synthetic release, twice: with a
budget that fits its replies (``--max-new-tokens 32``) and with one below its reasoning (``8``).
The same raw outputs (samples.jsonl ``raw_output``) are then read three more ways, item by item:

- ``cut``: the text after the last ``</think>`` (a plain string cut), strict parser: what the run
  should have read (it must agree with the run on every item);
- ``whole``: the whole text, strict parser (what a run read before reasoning was split off);
- ``final``: the whole text, last ``Answer:`` line (the ``reasoning`` prompt variant's parser, or
  any reader that takes the first letter it finds): it reads the decoy.

Printed: one Markdown row per run (accuracy in percent as each reader reads, how many items agree
with the run, reasoning / truncated / unparsed counts) and the run's ``--max-truncated`` line.
``--write-card`` writes the model's README.md with that table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmspubench.eval.bundled import ASSETS
from mmspubench.eval.replies.parse import parse_answer, parse_final_answer

MODEL = ASSETS / "tiny-llava-thinking"
BUDGETS = {"fits": 32, "short": 8}
"""``--max-new-tokens`` of the two runs: twice the replies' length, and below the reasoning's 15 tokens."""
CLOSING = "</think>"
COMMAND = "python bench/thinking_control.py --out runs/thinking-control"


def cut_answer(raw: str) -> str | None:
    """The text after the last closing marker, by hand (``None``: the block never closed)."""
    return raw.rsplit(CLOSING, 1)[1] if CLOSING in raw else None


def readings(raw: str, options: Sequence[str]) -> dict[str, str | None]:
    """The letter each reader takes from ``raw`` (module doc)."""
    after = cut_answer(raw)
    return {
        "cut": None if after is None else parse_answer(after, options),
        "whole": parse_answer(raw, options),
        "final": parse_final_answer(raw, options),
    }


def control_row(
    name: str,
    results: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    options: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    """One run's figures (module doc); ``options``: each item's options by id."""
    n = len(samples)
    read = [readings(s["raw_output"], options[s["id"]]) for s in samples]

    def accuracy(letters: Sequence[str | None]) -> float:
        return 100.0 * sum(letter == s["answer"] for letter, s in zip(letters, samples, strict=True)) / n

    replies = results["replies"]
    return {
        "run": name,
        "max_new_tokens": results["config"]["max_new_tokens"],
        "n": n,
        "run_accuracy": accuracy([s["prediction"] for s in samples]),
        **{f"{k}_accuracy": accuracy([r[k] for r in read]) for k in ("cut", "whole", "final")},
        "cut_agrees": sum(r["cut"] == s["prediction"] for r, s in zip(read, samples, strict=True)),
        "final_differs": sum(r["final"] != s["prediction"] for r, s in zip(read, samples, strict=True)),
        "reasoning": sum(s.get("reasoning") is not None for s in samples),
        "decoys": decoy_counts(samples),
        "truncated": replies["truncated"],
        "unparsed": replies["unparsed"],
    }


def decoy_counts(samples: Sequence[Mapping[str, Any]]) -> str:
    """How often each letter stands in the reasoning's ``Answer: (X)`` line, e.g. ``A 88, B 2``."""
    import re
    from collections import Counter

    found = Counter(
        m.group(1) for s in samples if (m := re.search(r"Answer: \(([A-D])\)", s.get("reasoning") or ""))
    )
    return ", ".join(f"{letter} {found[letter]}" for letter in sorted(found)) or "none"


HEADER = (
    "| run | --max-new-tokens | n | accuracy % (run) | accuracy % (cut by hand) | agree with run "
    "| accuracy % (whole text) | accuracy % (last Answer: line) | differ from run | decoy letters "
    "| with reasoning | truncated | unparsed |"
)


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as one Markdown table."""
    lines = [HEADER, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['run']} | {r['max_new_tokens']} | {r['n']} | {r['run_accuracy']:.1f} | "
            f"{r['cut_accuracy']:.1f} | {r['cut_agrees']} | {r['whole_accuracy']:.1f} | "
            f"{r['final_accuracy']:.1f} | {r['final_differs']} | {r['decoys']} | {r['reasoning']} | {r['truncated']} | "
            f"{r['unparsed']} |"
        )
    return "\n".join(lines)


def run_control(out: Path, model: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Both runs into ``out/<run>`` (a finished run is read back, not rerun): their rows and lines."""
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import data
    from mmspubench.eval.api import evaluate
    from mmspubench.eval.replies.summary import truncated_line

    ds, _ = load_pinned(str(default_dataset_dir()), "test")
    options = {item.id: item.options for item in data.load_items(ds, None, "bundled")}
    rows, lines = [], []
    for name, budget in BUDGETS.items():
        folder = out / name
        results = evaluate(
            model, out=folder, thinking="on", max_new_tokens=budget, metrics=("accuracy",), progress=False
        )
        assert results is not None
        text = (folder / "samples.jsonl").read_text(encoding="utf-8")
        samples = [json.loads(line) for line in text.splitlines()]
        rows.append(control_row(name, results, samples, options))
        line = truncated_line(results["replies"], results["config"].get("max_truncated", 0.05))
        lines.append(f"{name}: {line or 'no --max-truncated line'}")
    return rows, lines


def _cards() -> Any:
    """bench/confound_cards.py, which writes the other controls' cards (a script, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "confound_cards", Path(__file__).with_name("confound_cards.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train_command(config: Mapping[str, Any]) -> str:
    """The training command of ``config``, as the other controls' cards write it (bench/confound_cards.py)."""
    return str(_cards().train_command(config))


def model_card(training: Mapping[str, Any], table: str, lines: Sequence[str]) -> str:
    """README.md of the thinking control."""
    config, arch = training["config"], training["config"]["arch"]
    said = "\n".join(lines)
    return f"""---
license: mit
library_name: transformers
pipeline_tag: image-text-to-text
tags: [mm-spubench, synthetic, llava, positive-control, thinking]
---

# tiny-llava-thinking

A tiny LLaVA-architecture model trained from scratch on CPU on the synthetic training mode of
MM-SpuBench, like the bundled `tiny-llava-biased` (same architecture, data, seed and budget), but
taught to **think before it answers**: in `generate` mode it writes a reasoning block in the generic
`<think>` markers, holding a decoy letter, and then the option's text. It is a **positive control**
for `mmspubench eval --thinking` (docs/evaluate/thinking.md), not a useful model.

- Architecture: {arch["image_size"]} px images, {arch["patch_size"]} px patches; vision tower
  {arch["vision_layers"]} x {arch["vision_hidden"]}; language model {arch["text_layers"]} x {arch["text_hidden"]},
  {arch["heads"]} heads; {training["n_parameters"]:,} parameters, float32. `<think>` and `</think>` are
  special tokens of its tokenizer. Its chat template is the bundled one with Qwen3's generation
  prompt: it thinks unless `enable_thinking=False`, which writes the empty block
  `<think>\\n\\n</think>\\n\\n` (how eval renders the CGLA and `logprob` prompts of a thinking model).
- Data: {config["n_items"]} synthetic training items (mode `train`, seed {config["seed"]}); planted spurious
  values are the class's home values with probability {config["correlation"]}. The `generate` target is
  `<think>\\nAnswer: (X)\\nNo, look again.\\n</think>\\n\\n` then the correct option's text, where X is the
  first letter that is not the gold one (A, or B when A is gold); the `logprob` and CGLA prompts are
  learned as the other models learn them, rendered thinking off.
{_cards().training_text(training)}

## What it shows

`mmspubench eval --thinking on` on the bundled synthetic release (90 items), and the same raw
outputs read by hand: the text after `</think>` by the strict parser (cut by hand), the whole text
by the strict parser, and the whole text's last `Answer:` line (where the decoy stands):

{table}

The decoy the model writes is the letter it learned most often, whatever the item: like its twins
it does not learn to pick letters, so the last `Answer:` line is right only where that letter
happens to be the gold one. Each run's last line on stderr (`--max-truncated 0.05`, exit code 0):

```text
{said}
```

```bash
{COMMAND}
```

## Limitations

- Synthetic scenes only; ten classes; 64 px images. Nothing here transfers to real images.
- Its reasoning is a fixed text, not reasoning: the control shows how eval reads a reply, not
  that thinking helps. It answers with the option's text, like its twins.
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The thinking control's figures (module doc).")
    parser.add_argument("--out", required=True, type=Path, help="folder of the two runs")
    parser.add_argument("--model", type=Path, default=MODEL, help="the control model's folder")
    parser.add_argument("--write-card", action="store_true", help="write the model's README.md")
    args = parser.parse_args(argv)
    rows, lines = run_control(args.out, args.model)
    table = markdown(rows)
    print(table)
    print("\n".join(lines))
    if args.write_card:
        training = json.loads((args.model / "training.json").read_text(encoding="utf-8"))
        card = model_card(training, table, lines)
        (args.model / "README.md").write_text(card, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
