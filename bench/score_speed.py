"""Plain vs fast continuation scoring on the same model, in one run.

For each profile the same generated items are scored twice through the adapter's ``score`` (the
CGLA conditions of ``--items-per-call`` items in one call, the same for the four option letters of
logprob mode), first with the plain scorer, then with the fast one (each after a warm-up call).
Printed per profile and workload: items/s of both, their ratio (wall time and CPU time of this
process), peak memory during scoring, the largest difference between the two scorers'
log-probabilities, and the tokens the language model processed (padding included) against the
unique-token minimum (per item: one shared prefix plus each request's tokens after it).

Profiles:
  bundled    the bundled tiny model (16 image tokens)
  realistic  LLaVA-1.5 token profile on the CPU: 336 px images, patch 14 (576 image tokens),
             32k vocabulary, a 42M-parameter language model (8 x 512 Llama); built offline,
             saved, loaded back with load_model
  llava-7b   llava-1.5-7b's shapes with random weights, built directly on --device (GPU script)
  tiny       the llava-7b code path on a few-kilobyte model (checks the GPU script on a CPU)
  families   every family of the test matrix (tests/eval/families: tiny random models, 2-layer
             32-wide language models, 4-256 image tokens), one row per family: what the fast
             scorer saves per family at equal (tiny) model size, or why it falls back

Items follow the benchmark's profile: 1-5 core and 1-5 spurious attributes (2-7 words each),
class names of 1-4 tokens, one image each.

Examples:
  python bench/score_speed.py                                # bundled + realistic, ~1 min
  python bench/score_speed.py --profile realistic --items-per-call 1   # one call per item
  python bench/score_speed.py --profile realistic --items 6
  python bench/score_speed.py --profile llava-7b --device cuda --dtype bfloat16 --items 60 --extrapolate 2400
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llava_profile
from mmspubench.eval import prompts
from mmspubench.eval.backends.transformers.prefix_plan import common_prefix_len
from mmspubench.eval.protocol import ScoreRequest

ATTRIBUTE_WORDS = (
    "red",
    "green",
    "blue",
    "striped",
    "spotted",
    "wooden",
    "metal",
    "plastic",
    "bright",
    "dark",
    "small",
    "large",
    "round",
    "pointed",
    "furry",
    "grass",
    "sky",
    "water",
    "snow",
    "road",
    "wall",
    "floor",
    "beach",
    "street",
    "shadow",
    "texture",
    "background",
    "sunset",
    "tail",
)
"""Words of the generated attribute texts."""


@dataclass(frozen=True, slots=True)
class Item:
    """The requests of one generated benchmark item."""

    cgla: tuple[ScoreRequest, ...]
    """One request per core and spurious attribute."""
    options: tuple[ScoreRequest, ...]
    """The four option letters in logprob mode."""


def make_items(adapter: Any, n: int, seed: int, image_side: int) -> list[Item]:
    """``n`` items with the benchmark's profile (see module docstring), rendered by ``adapter``."""
    from PIL import Image

    rng = random.Random(seed)
    tokenizer = adapter.processor.tokenizer
    items = []
    for _ in range(n):
        size = (int(image_side * rng.uniform(1.0, 1.4)), int(image_side * rng.uniform(0.9, 1.2)))
        image = Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
        attributes = [
            " ".join(rng.sample(ATTRIBUTE_WORDS, rng.randint(2, 7)))
            for _ in range(rng.randint(1, 5) + rng.randint(1, 5))
        ]
        class_name = _class_name(rng, tokenizer, rng.randint(1, 4))
        continuation = prompts.cgla_continuation(class_name)
        cgla = tuple(
            ScoreRequest(image, adapter.render(prompts.cgla_prompt(a)), continuation) for a in attributes
        )
        mcq = adapter.render(
            prompts.mcq_prompt(
                "What is the main object in the image?",
                [_class_name(rng, tokenizer, 2) for _ in range(4)],
                "logprob",
            )
        )
        options = tuple(ScoreRequest(image, mcq, letter) for letter in prompts.letter_continuations())
        items.append(Item(cgla=cgla, options=options))
    return items


def _class_name(rng: random.Random, tokenizer: Any, tokens: int) -> str:
    """Words whose continuation (with its leading space) is ``tokens`` tokens, or close to it."""
    words: list[str] = []
    while len(tokenizer(" " + " ".join(words), add_special_tokens=False)["input_ids"]) < tokens:
        words.append(rng.choice(llava_profile.BENCH_WORDS))
    return " ".join(words)


def _release_free_memory() -> None:
    """Hand freed heap pages back to the OS (glibc), so that RSS growth measures what a scorer needs."""
    import contextlib
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError):  # not glibc: the RSS baseline then includes free heap pages
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakMemory:
    """Peak memory above the starting level: CUDA allocator statistics, else sampled RSS (every 2 ms)."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.peak_mib = 0.0
        self._stop = threading.Event()

    def __enter__(self) -> PeakMemory:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
        else:
            _release_free_memory()
            self._base = self._rss()
            self._max = self._base
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            self.peak_mib = (torch.cuda.max_memory_allocated() - self._base) / 2**20
        else:
            self._stop.set()
            self._thread.join()
            self.peak_mib = (self._max - self._base) / 2**20

    @staticmethod
    def _rss() -> int:
        import os

        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self._max = max(self._max, self._rss())


def run_scorer(
    adapter: Any,
    warm: tuple[ScoreRequest, ...],
    calls: list[tuple[ScoreRequest, ...]],
    scorer: str,
    device: str,
) -> tuple[float, float, float, list[float]]:
    """(wall seconds, CPU seconds, peak MiB, scores) of one pass over ``calls`` with ``scorer``, after a warm-up call.

    CPU seconds (this process, all threads) are reported beside wall time because a shared CPU
    makes wall time depend on the neighbours' load."""
    import torch

    adapter.scorer = scorer
    adapter.score(warm)  # first-call allocations and kernel selection stay out of the timing
    scores: list[float] = []
    with PeakMemory(device) as memory:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start, cpu_start = time.perf_counter(), time.process_time()
        for requests in calls:
            scores.extend(adapter.score(requests))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return seconds, cpu, memory.peak_mib, scores


def token_counts(adapter: Any, calls: list[tuple[ScoreRequest, ...]]) -> tuple[int, int, int]:
    """(plain tokens with its padding, fast tokens with its padding, unique-token minimum)."""
    from mmspubench.eval.backends.transformers import fast_scoring

    plain = fast = minimum = 0
    for requests in calls:
        encoded = [fast_scoring.encode(adapter, r) for r in requests]
        lengths = sorted((e.ids.shape[0] for e in encoded), reverse=True)
        # score_plain: longest first, batch_size rows per pass, right-padded to the longest row.
        plain += sum(
            lengths[k] * len(lengths[k : k + adapter.batch_size])
            for k in range(0, len(lengths), adapter.batch_size)
        )
        fast += fast_scoring.plan_call(
            adapter.model, encoded, requests, batch_size=adapter.batch_size
        ).processed_tokens
        by_item: dict[int, list[tuple[int, ...]]] = {}
        for request, enc in zip(requests, encoded, strict=True):
            by_item.setdefault(id(request.image), []).append(tuple(enc.ids.tolist()))
        for ids in by_item.values():
            # One shared prefix per item, then every request's own tokens after it.
            shared = min(common_prefix_len(ids[0], other) for other in ids)
            minimum += shared + sum(len(x) - shared for x in ids)
    return plain, fast, minimum


def load_profile(args: argparse.Namespace, workdir: Path) -> Any:
    """The adapter of ``args.profile`` (see module docstring)."""
    from mmspubench.eval.backends.transformers.adapter import TransformersVLM
    from mmspubench.eval.backends.transformers.loading import load_model
    from mmspubench.eval.checkpoint.hooks import hooks_for
    from mmspubench.eval.protocol import ModelInfo

    if args.profile == "bundled":
        from mmspubench.eval.bundled import bundled_model_dir

        return load_model(
            bundled_model_dir(), device=args.device, dtype=args.dtype, batch_size=args.batch_size
        )
    if args.profile == "realistic":
        folder = llava_profile.save_llava(workdir / "realistic-llava", llava_profile.CPU_REALISTIC)
        return load_model(folder, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    shape = llava_profile.LLAVA_7B if args.profile == "llava-7b" else llava_profile.TINY
    model, processor = llava_profile.build_llava(shape, device=args.device, dtype=args.dtype)
    info = ModelInfo(
        id=f"random-{args.profile}",
        path="",
        revision=None,
        dtype=args.dtype,
        adapter="hf-image-text-to-text/llava",
    )
    return TransformersVLM(model, processor, hooks=hooks_for("llava"), info=info, batch_size=args.batch_size)


def bench_profile(args: argparse.Namespace, workdir: Path) -> None:
    """Build/load the profile's model, score its items with both scorers, print one row per workload."""
    adapter = load_profile(args, workdir)
    params = sum(p.numel() for p in adapter.model.model.language_model.parameters()) / 1e6
    side = adapter.processor.image_processor.crop_size["height"]
    items = make_items(adapter, args.items + 1, args.seed, side)
    warm, items = items[0], items[1:]
    per_call = max(1, args.items_per_call)
    workloads = {
        name: [
            tuple(r for item in items[k : k + per_call] for r in getattr(item, name))
            for k in range(0, len(items), per_call)
        ]
        for name in ("cgla", "options")
    }
    image_tokens = int((fast_encode_ids(adapter, warm.cgla[0]) == adapter.model.config.image_token_id).sum())
    print(
        f"\n## {args.profile}: language model {params:.1f}M parameters, {image_tokens} image tokens, "
        f"{len(items)} items ({sum(len(i.cgla) for i in items)} CGLA conditions), {per_call} item(s) per "
        f"score call, device {args.device}, dtype {args.dtype}, batch size {args.batch_size}"
    )
    print(
        "| workload | plain items/s | fast items/s | ratio | CPU-time ratio | plain peak MiB | fast peak MiB "
        "| plain tokens | fast tokens | unique minimum | fast / minimum | max abs diff |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    totals = {"plain": 0.0, "fast": 0.0}
    for name, calls in workloads.items():
        warm_call = getattr(warm, name)
        plain_s, plain_cpu, plain_mem, plain_scores = run_scorer(
            adapter, warm_call, calls, "plain", args.device
        )
        fast_s, fast_cpu, fast_mem, fast_scores = run_scorer(adapter, warm_call, calls, "fast", args.device)
        totals["plain"] += plain_s
        totals["fast"] += fast_s
        diff = max(abs(a - b) for a, b in zip(plain_scores, fast_scores, strict=True))
        plain_tok, fast_tok, minimum = token_counts(adapter, calls)
        n = len(items)
        print(
            f"| {name} | {n / plain_s:.3f} | {n / fast_s:.3f} | {plain_s / fast_s:.2f}x | {plain_cpu / fast_cpu:.2f}x | {plain_mem:.0f} "
            f"| {fast_mem:.0f} | {plain_tok} | {fast_tok} | {minimum} | {fast_tok / minimum:.2f}x | {diff:.2e} |"
        )
    if args.extrapolate:
        for scorer, seconds in totals.items():
            minutes = seconds / len(items) * args.extrapolate / 60
            print(
                f"extrapolated {scorer} scoring time for {args.extrapolate} items (CGLA + logprob options): "
                f"{minutes:.1f} min"
            )
        print(f"extrapolated ratio: {totals['plain'] / totals['fast']:.2f}x")


def bench_families(args: argparse.Namespace, workdir: Path) -> None:
    """One row per matrix family: plain vs fast items/s on the same generated items (CGLA + options)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.eval.backends.transformers.loading import load_model

    from tests.eval.families.registry import BUILDERS, family_dir

    print(
        f"\n## families: tiny random models, {args.items} items, {max(1, args.items_per_call)} item(s) per "
        f"score call, device {args.device}, dtype {args.dtype}, batch size {args.batch_size}, fastest of "
        f"{max(1, args.repeats)} alternating runs"
    )
    print(
        "| family | scorer | plain items/s | fast items/s | ratio | CPU-time ratio | plain tokens | fast tokens "
        "| max abs diff |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for family in sorted(BUILDERS):
        try:
            adapter = load_model(
                family_dir(family, workdir), device=args.device, dtype=args.dtype, batch_size=args.batch_size
            )
        except MMSpuBenchError as err:
            print(f"| {family} | cannot load: {str(err).split(': ', 1)[-1]} | | | | | | | |")
            continue
        items = make_items(adapter, args.items + 1, args.seed, 48)
        warm, items = items[0], items[1:]
        per_call = max(1, args.items_per_call)
        calls = [
            tuple(r for item in items[k : k + per_call] for r in (*item.cgla, *item.options))
            for k in range(0, len(items), per_call)
        ]
        warm_call = (*warm.cgla, *warm.options)
        # Alternating repeats, the fastest of each kept: a shared CPU's load spikes stay out of the ratio.
        plain_s = plain_cpu = fast_s = fast_cpu = float("inf")
        for _ in range(max(1, args.repeats)):
            seconds, cpu, _, plain_scores = run_scorer(adapter, warm_call, calls, "plain", args.device)
            plain_s, plain_cpu = min(plain_s, seconds), min(plain_cpu, cpu)
            seconds, cpu, _, fast_scores = run_scorer(adapter, warm_call, calls, "fast", args.device)
            fast_s, fast_cpu = min(fast_s, seconds), min(fast_cpu, cpu)
        diff = max(abs(a - b) for a, b in zip(plain_scores, fast_scores, strict=True))
        plain_tok, fast_tok, _ = token_counts(adapter, calls)
        # run_scorer leaves the adapter on the fast scorer: what it reports is what the fast run did.
        on_fast = adapter.scorer_used == "fast"
        used = "fast" if on_fast else f"plain ({adapter.scorer_fallback_reason})"
        fast_tok_text = str(fast_tok) if on_fast else "—"
        n = len(items)
        print(
            f"| {family} | {used} | {n / plain_s:.2f} | {n / fast_s:.2f} | {plain_s / fast_s:.2f}x "
            f"| {plain_cpu / fast_cpu:.2f}x | {plain_tok} | {fast_tok_text} | {diff:.2e} |"
        )


def fast_encode_ids(adapter: Any, request: ScoreRequest) -> Any:
    """Token ids of one request as both scorers see them."""
    return adapter.encode(request).inputs["input_ids"][0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--profile",
        action="append",
        choices=("bundled", "realistic", "llava-7b", "tiny", "families"),
        help="profile to run (repeatable; default: bundled and realistic)",
    )
    parser.add_argument("--items", type=int, default=6, help="timed items per profile (default 6)")
    parser.add_argument(
        "--batch-size", type=int, default=8, help="adapter batch size for both scorers (default 8)"
    )
    parser.add_argument(
        "--items-per-call",
        type=int,
        default=8,
        help="items whose requests go in one score call (default 8; 1 = one call per item)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: on a shared CPU, multi-threaded small ops stall on each other)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="families profile: alternating plain/fast timings per family, the fastest of each kept (default 3)",
    )
    parser.add_argument(
        "--extrapolate",
        type=int,
        default=0,
        metavar="N",
        help="also print the scoring time extrapolated to N items (e.g. 2400)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where built models are kept (default: temp)"
    )
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    profiles = args.profile or ["bundled", "realistic"]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        for profile in profiles:
            args.profile = profile
            if profile == "families":
                bench_families(args, workdir)
            else:
                bench_profile(args, workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
