"""The cost of circular evaluation: four rotations against the published order, logprob mode.

On one profile the same generated items are scored twice with the fast scorer: the vanilla
workload (each item's four option letters in the published order) and the circular one (the four
letters of each of the four cyclic rotations, sixteen requests per item, all of an item's in one
call). Printed: items/s of both, their wall-time and CPU-time ratios, the tokens the language
model ran (padding included) and the largest difference between the circular scores and the
plain scorer's on every rotated prompt (the check that sharing computes what plain passes do).

Where the work goes: the image and the question before the options run once per item for all
rotations (one prefix pass); each rotation then feeds its options, the instruction and the
answer prefix once (its four letters share that feed); nothing else is repeated.

Examples:
  python bench/circular_cost.py                       # realistic: 576 image tokens on the CPU
  python bench/circular_cost.py --profile llava-7b --device cuda --dtype bfloat16 --items 64
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import score_speed
from mmspubench.eval import prompts
from mmspubench.eval.protocol import ScoreRequest
from mmspubench.eval.views.confounds import metrics as metrics_confounds


def make_calls(adapter: Any, n: int, seed: int, per_call: int) -> dict[str, list[tuple[ScoreRequest, ...]]]:
    """``vanilla`` and ``circular`` calls over the same ``n`` generated items."""
    from PIL import Image

    rng = random.Random(seed)
    side = adapter.processor.image_processor.crop_size["height"]
    tokenizer = adapter.processor.tokenizer
    per_item: dict[str, list[list[ScoreRequest]]] = {"vanilla": [], "circular": []}
    for _ in range(n):
        size = (int(side * rng.uniform(1.0, 1.4)), int(side * rng.uniform(0.9, 1.2)))
        image = Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
        options = [score_speed._class_name(rng, tokenizer, rng.randint(2, 5)) for _ in range(4)]
        rotations = []
        for k in metrics_confounds.ROTATIONS:
            shown = metrics_confounds.rotated_options(options, k)
            context = adapter.render(
                prompts.mcq_prompt("What is the main object in the image?", shown, "logprob")
            )
            rotations.append([ScoreRequest(image, context, c) for c in prompts.letter_continuations()])
        per_item["vanilla"].append(rotations[0])
        per_item["circular"].append([r for rotation in rotations for r in rotation])
    return {
        name: [
            tuple(r for item in items[k : k + per_call] for r in item) for k in range(0, len(items), per_call)
        ]
        for name, items in per_item.items()
    }


def timed(
    adapter: Any, calls: list[tuple[ScoreRequest, ...]], device: str
) -> tuple[float, float, list[float]]:
    """(wall seconds, CPU seconds, scores) of the fast scorer over ``calls`` (after a warm-up call)."""
    import torch

    adapter.scorer = "fast"
    adapter.score(calls[0])
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    scores = [s for call in calls for s in adapter.score(call)]
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start, time.process_time() - cpu, scores


def bench(args: argparse.Namespace, workdir: Path) -> float:
    """Print the row of ``args.profile``; returns the wall-time ratio circular / vanilla."""
    adapter = score_speed.load_profile(args, workdir)
    calls = make_calls(adapter, args.items, args.seed, max(1, args.items_per_call))
    first = calls["vanilla"][0][0]
    image_tokens = int(
        (score_speed.fast_encode_ids(adapter, first) == adapter.model.config.image_token_id).sum()
    )
    rows = {}
    for name in ("vanilla", "circular"):
        seconds, cpu, scores = timed(adapter, calls[name], args.device)
        _, fast_tokens, _ = score_speed.token_counts(adapter, calls[name])
        rows[name] = (seconds, cpu, fast_tokens, scores)
    adapter.scorer = "plain"
    plain = [s for call in calls["circular"] for s in adapter.score(call)]
    diff = max(abs(a - b) for a, b in zip(plain, rows["circular"][3], strict=True))
    (vs, vc, vt, _), (cs, cc, ct, _) = rows["vanilla"], rows["circular"]
    print(
        f"\n## {args.profile}: {image_tokens} image tokens, {args.items} items, {args.items_per_call} item(s) "
        f"per call, device {args.device}, dtype {args.dtype}, batch size {args.batch_size}, fast scorer"
    )
    print(
        "| vanilla items/s | circular items/s | wall ratio | CPU ratio | vanilla tokens | circular tokens "
        "| token ratio | max abs diff vs plain |"
    )
    print("|---|---|---|---|---|---|---|---|")
    n = args.items
    print(
        f"| {n / vs:.3f} | {n / cs:.3f} | {cs / vs:.2f}x | {cc / vc:.2f}x | {vt} | {ct} | {ct / vt:.2f}x | {diff:.2e} |"
    )
    return cs / vs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--profile", default="realistic", choices=("bundled", "realistic", "llava-7b", "tiny")
    )
    parser.add_argument("--items", type=int, default=8, help="timed items (default 8)")
    parser.add_argument("--items-per-call", type=int, default=8, help="items per score call (default 8)")
    parser.add_argument("--batch-size", type=int, default=8, help="adapter batch size (default 8)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
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
