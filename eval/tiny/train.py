"""Train a tiny LLaVA-architecture model from scratch on the synthetic training mode (CPU, seeded).

The model is a positive control for the benchmark: trained where the class co-occurs with a
planted spurious value (``correlation`` close to 1) it should answer from the cue, and its twin
trained with the correlation removed should not. Both learn the two things eval asks of them,
rendered exactly as eval renders them (``mmspubench.eval.prompts``):

- the multiple-choice prompt, in ``generate`` mode (by default the correct option's text, then end
  of turn; eval's parser reads an option's text as that option) and in ``logprob`` mode (the letter
  after ``Answer:``);
- the CGLA prompt g(t) for every core and every spurious attribute, continued by the class name.

With ``--reasoning`` (the thinking control, ``eval/assets/tiny-llava-thinking``) the model ships a
thinking chat template (Qwen3's switch: it thinks unless ``enable_thinking=False``), ``<think>`` and
``</think>`` are special tokens of its tokenizer, and the generate-mode answer follows a short fixed
reasoning block holding a decoy letter (``examples.REASONING``); the scored prompts are rendered
thinking off, with the empty reasoning block, as eval renders them.

The loss is the cross-entropy of the continuation tokens only. Continuation tokens are found the
way the scorer finds them: the tokens of context + continuation after the tokens of the context,
with the prefix property checked.

Command (the shipped weights were made with it; see their model cards)::

    python -m mmspubench.eval.tiny.train --out eval/assets/tiny-llava-biased --correlation 0.95
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.schema import Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.tiny.examples import Encoded, load_items, prepare
from mmspubench.eval.tiny.llava import Architecture, build_tokenizer, save_tiny_llava
from mmspubench.eval.tiny.tokenizer import THINKING_CHAT_TEMPLATE, TINY_CHAT_TEMPLATE

if TYPE_CHECKING:
    import torch
    from mmspubench.eval.backends.transformers.adapter import TransformersVLM
    from transformers import LlavaForConditionalGeneration


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything that determines a trained model; written into its model card."""

    out: str
    """Folder the model is written to (replaced atomically at the end)."""
    correlation: float | None
    """Probability that the planted spurious value is the class's home value; ``None``: balanced."""
    n_items: int = 4000
    """Synthetic training items (each gives 2 multiple-choice and one example per attribute)."""
    seed: int = 0
    """Seed of the data, the initial weights and the example order."""
    steps: int = 2000
    """Optimiser steps."""
    batch_size: int = 32
    """Examples per step."""
    lr: float = 3e-3
    """Peak learning rate of AdamW (linear warm-up, cosine decay)."""
    warmup: int = 100
    """Warm-up steps."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    threads: int = 1
    """Torch CPU threads (on a shared 2-core machine one thread per run was 5x faster than two)."""
    log_every: int = 50
    """Steps between two log lines."""
    generate_answer: str = "option"
    """What the model learns to answer in ``generate`` mode: ``option`` (the correct option's text)
    or ``letter``. Picking the letter means finding the option line that holds the class and copying
    the letter before it; within the default budget that never emerged (accuracy stayed at 25%,
    chance, for both models in every condition), while the option's text is learned."""
    arch: Architecture = field(default_factory=Architecture)
    """Model sizes."""
    correlated_types: tuple[str, ...] | None = None
    """Types that carry the correlated cue (synth ``correlated_types``); ``None``: every type."""
    letter_bias: tuple[str, float] | None = None
    """Planted letter bias (synth ``letter_bias``): the gold answer at the letter with this
    probability; ``None``: letters balanced. A positive control of circular evaluation."""
    text_prior_types: tuple[str, ...] | None = None
    """Planted text prior (synth ``text_prior_types``): items of these types name their class in
    the question; ``None``: none does. A positive control of the blind baseline."""
    reasoning: bool = False
    """Learn a ``<think>`` reasoning block with a decoy letter before the generate-mode answer,
    under a thinking chat template (module doc). A positive control of ``--thinking``."""


def config_from_json(obj: Mapping[str, Any]) -> TrainConfig:
    """The ``TrainConfig`` a ``training.json`` records (its ``config``; fields it lacks keep their defaults)."""
    tuples = ("correlated_types", "letter_bias", "text_prior_types")
    fields: dict[str, Any] = {
        k: (tuple(v) if k in tuples and v is not None else v) for k, v in obj.items() if k != "arch"
    }
    return TrainConfig(**fields, arch=Architecture(**obj.get("arch", {})))


def training_items(config: TrainConfig, n: int | None = None) -> list[Any]:
    """The first ``n`` (default all) training items of ``config``, exactly as ``train`` draws them."""
    return load_items(
        config.n_items if n is None else n,
        seed=config.seed,
        image_size=config.arch.image_size,
        correlation=config.correlation,
        correlated_types=config.correlated_types,
        letter_bias=config.letter_bias,
        text_prior_types=config.text_prior_types,
    )


@dataclass(frozen=True, slots=True)
class TrainSummary:
    """What a training run reports (also written to ``training.json`` next to the weights)."""

    config: dict[str, Any]
    """The ``TrainConfig`` as a dict."""
    n_examples: int
    """Training sequences made from the items."""
    n_parameters: int
    """Parameters of the model."""
    losses: tuple[float, ...]
    """Mean continuation loss (nats per token) over each ``log_every`` window."""
    seconds: float
    """Wall time of the optimisation."""


# ---------------------------------------------------------------- encoding and the loss


def batch_tensors(batch: Sequence[Encoded], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask, and a mask of the positions whose next token is scored."""
    import torch

    width = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    predicts = torch.zeros((len(batch), width), dtype=torch.bool)
    for row, e in enumerate(batch):
        ids[row, : len(e.ids)] = torch.tensor(e.ids)
        attention[row, : len(e.ids)] = 1
        # Position p predicts token p + 1: the positions start-1 .. len-2 predict the continuation.
        predicts[row, e.start - 1 : len(e.ids) - 1] = True
    return ids, attention, predicts


def continuation_loss(
    model: LlavaForConditionalGeneration, batch: Sequence[Encoded], pixels: torch.Tensor, pad_id: int
) -> torch.Tensor:
    """Mean cross-entropy over the continuation tokens of the batch (the LM head only where needed)."""
    import torch
    import torch.nn.functional as F

    ids, attention, predicts = batch_tensors(batch, pad_id)
    index = torch.tensor([e.item for e in batch])
    hidden = model.model(
        input_ids=ids, pixel_values=pixels[index], attention_mask=attention
    ).last_hidden_state
    targets = ids[:, 1:][predicts[:, :-1]]
    logits = model.lm_head(hidden[predicts])
    return F.cross_entropy(logits.float(), targets)


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up to 1, then cosine decay to 0.1 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


# ---------------------------------------------------------------- the training run


def initial_adapter(
    items: Sequence[Item], arch: Architecture, seed: int, folder: Path, reasoning: bool = False
) -> TransformersVLM:
    """The untrained model written to ``folder`` and loaded back through eval's ``load_model``.

    Training then renders and tokenizes with this adapter, so that every sequence it learns from
    is exactly what eval will give the shipped model (``reasoning``: its thinking template, whose
    scored prompts the adapter renders thinking off).
    """
    from mmspubench.eval.backends.transformers.loading import load_model

    tokenizer = build_tokenizer(items, arch.vocab_size, reasoning)
    template = THINKING_CHAT_TEMPLATE if reasoning else TINY_CHAT_TEMPLATE
    save_tiny_llava(folder, tokenizer, arch, seed, template)
    return load_model(folder, scorer="plain")


def optimise(
    model: LlavaForConditionalGeneration,
    encoded: Sequence[Encoded],
    pixels: torch.Tensor,
    config: TrainConfig,
    pad_id: int,
    log: Callable[[str], None],
) -> list[float]:
    """AdamW over shuffled epochs of the examples; the mean loss of each ``log_every`` window."""
    import torch

    torch.set_num_threads(config.threads)
    order_rng = torch.Generator().manual_seed(config.seed)
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay, betas=(0.9, 0.98)
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: lr_factor(s, config.warmup, config.steps)
    )
    model.train()
    queue: list[int] = []
    window: list[float] = []
    losses: list[float] = []
    started = time.perf_counter()
    for step in range(config.steps):
        while len(queue) < config.batch_size:
            queue += torch.randperm(len(encoded), generator=order_rng).tolist()
        batch, queue = [encoded[i] for i in queue[: config.batch_size]], queue[config.batch_size :]
        loss = continuation_loss(model, batch, pixels, pad_id)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        window.append(float(loss.detach()))
        if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
            losses.append(sum(window) / len(window))
            window = []
            log(
                f"step {step + 1}/{config.steps} loss {losses[-1]:.4f} "
                f"lr {schedule.get_last_lr()[0]:.2e} {time.perf_counter() - started:.0f}s"
            )
    model.eval()
    return losses


def train(
    config: TrainConfig, items: Sequence[Item] | None = None, log: Callable[[str], None] = print
) -> TrainSummary:
    """Build, train and save a tiny LLaVA to ``config.out`` (written beside it, then renamed)."""
    out = Path(config.out)
    if items is None:
        items = training_items(config)

    chosen: Sequence[Item] = items

    def train_into(folder: Path) -> TrainSummary:
        adapter = initial_adapter(chosen, config.arch, config.seed, folder, config.reasoning)
        encoded, pixels = prepare(chosen, adapter, config.generate_answer, config.reasoning)
        model = adapter.model
        n_params = sum(p.numel() for p in model.parameters())
        log(
            f"{len(chosen)} items, {len(encoded)} examples, {n_params} parameters, "
            f"longest sequence {max(len(e.ids) for e in encoded)} tokens"
        )
        started = time.perf_counter()
        losses = optimise(model, encoded, pixels, config, adapter.pad_token_id, log)
        summary = TrainSummary(
            asdict(config), len(encoded), n_params, tuple(losses), time.perf_counter() - started
        )
        model.save_pretrained(folder)
        (folder / "training.json").write_text(json.dumps(asdict(summary), indent=2) + "\n")
        return summary

    # Written beside ``out`` and swapped in: an interrupted run leaves the old folder as it was.
    return replace_folder(out, train_into)


def _planting(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[tuple[str, ...] | None, tuple[str, float] | None, tuple[str, ...] | None]:
    """``--correlated-types``, ``--letter-bias`` and ``--text-prior-types`` parsed as
    ``mmspubench synth`` parses them.

    A bad value is one line and exit 2, without the usage: the value, not the command, is wrong.
    """
    from mmspubench.dataset_builder.synth.cli import parse_type_list
    from mmspubench.dataset_builder.synth.confounds import parse_letter_bias

    if args.correlated_types is not None and args.correlation is None:
        # Balanced data plants random values on every type: there is no cue to restrict.
        _refuse(parser, "--correlated-types needs --correlation (balanced data has no correlated cue)")
    try:
        correlated = (
            None
            if args.correlated_types is None
            else parse_type_list(args.correlated_types, "--correlated-types")
        )
        bias = None if args.letter_bias is None else parse_letter_bias(args.letter_bias)
        types = None if args.text_prior_types is None else parse_type_list(args.text_prior_types)
    except MMSpuBenchError as err:
        _refuse(parser, str(err))
    return correlated, bias, types


def _refuse(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.exit(2, f"{parser.prog}: error: {message}\n")


def parse_args(argv: Sequence[str] | None = None) -> TrainConfig:
    """Command-line options -> ``TrainConfig``."""
    defaults = TrainConfig(out="", correlation=None)
    parser = argparse.ArgumentParser(
        prog="python -m mmspubench.eval.tiny.train",
        description="Train a tiny LLaVA on the synthetic training mode (CPU, seeded).",
        epilog="example: python -m mmspubench.eval.tiny.train --out eval/assets/tiny-llava-biased --correlation 0.95",
    )
    parser.add_argument("--out", required=True, help="folder to write the model to")
    parser.add_argument(
        "--correlation",
        type=float,
        default=None,
        help="P(planted spurious value = the class's home value); omit for balanced data",
    )
    for name in ("n_items", "seed", "steps", "batch_size", "warmup", "threads", "log_every"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    parser.add_argument("--lr", type=float, default=defaults.lr)
    parser.add_argument(
        "--generate-answer",
        choices=("option", "letter"),
        default=defaults.generate_answer,
        help="answer learned in generate mode: the option's text (default) or its letter",
    )
    parser.add_argument(
        "--correlated-types",
        metavar="TYPE,...",
        default=None,
        help="plant the correlated cue only on these types (e.g. colorization or Col.); "
        "the other types' values are drawn uniformly; needs --correlation",
    )
    parser.add_argument(
        "--letter-bias",
        metavar="LETTER:SHARE",
        default=None,
        help="plant a letter bias: the gold answer at LETTER with probability SHARE (e.g. A:0.9)",
    )
    parser.add_argument(
        "--text-prior-types",
        metavar="TYPE,...",
        default=None,
        help="plant a text prior: items of these types name their class in the question",
    )
    parser.add_argument(
        "--reasoning",
        action="store_true",
        help="learn a <think> reasoning block (with a decoy letter) before the generate-mode answer, "
        "under a thinking chat template: the control of --thinking",
    )
    parser.add_argument("--image-size", type=int, default=defaults.arch.image_size)
    parser.add_argument("--patch-size", type=int, default=defaults.arch.patch_size)
    args = parser.parse_args(argv)
    if args.correlation is not None and not 0.0 <= args.correlation <= 1.0:
        parser.error(f"--correlation must be in [0, 1], got {args.correlation}")
    correlated_types, letter_bias, prior_types = _planting(parser, args)
    return TrainConfig(
        out=args.out,
        correlation=args.correlation,
        n_items=args.n_items,
        seed=args.seed,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        threads=args.threads,
        log_every=args.log_every,
        generate_answer=args.generate_answer,
        correlated_types=correlated_types,
        letter_bias=letter_bias,
        text_prior_types=prior_types,
        reasoning=args.reasoning,
        arch=replace(defaults.arch, image_size=args.image_size, patch_size=args.patch_size),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m mmspubench.eval.tiny.train``."""
    config = parse_args(argv)
    summary = train(config, log=lambda line: print(line, flush=True))
    print(f"wrote {config.out} ({summary.seconds:.0f}s, final loss {summary.losses[-1]:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
