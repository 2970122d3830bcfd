"""Engines side by side: items/s of the accuracy part and of the CGLA part, one run, same items.

Engines: transformers with the plain scorer, transformers with the fast (prefix-cached) scorer,
and vLLM offline (``--backend vllm``) twice: reading its prefix cache (the default: each item's
image and shared prompt computed once, see mmspubench.eval.backends.vllm.cache) and not reading it
(``enable_prefix_caching: false``, every condition computes its whole prompt), all through the
model Protocol and the runner's
``evaluate_items`` (accuracy = greedy generation + parser; CGLA = one score call per chunk), on
the same items of the bundled synthetic split and the same model folder. Each engine gets one
warm-up chunk first (not timed). Also printed: the largest |CGL difference| of each engine against
the plain scorer on these items (the speed is only worth having with the same figures), and a
CGLA table of the prompt tokens each engine computed per item next to the unique minimum (each
image and shared prefix once plus each condition's own suffix): for vLLM its checked counts
(``num_cached_tokens``; rescored requests counted twice; it may go below the minimum, as the
accuracy part's prompt of the same item leaves the image's blocks in the cache), for transformers
the tokens its scorer feeds (padding included). The vLLM engine's prefix cache is emptied after the
warm-up, so that the timed items are not in it already.

Run it with a python that has both transformers and vLLM (here: the vLLM environment, see the
README; on a CPU set ``VLLM_CPU_KVCACHE_SPACE=1 TORCHDYNAMO_DISABLE=1``):

  python bench/engines.py                                   # bundled tiny LLaVA, CPU, 40 items
  python bench/engines.py --profile realistic --items 12    # LLaVA-1.5 token profile on the CPU
  python bench/engines.py --profile llava-7b --device cuda --dtype bfloat16 --items 200 --extrapolate 2400

Profiles: ``bundled`` (the shipped trained tiny LLaVA), ``realistic`` and ``llava-7b`` (random
weights with LLaVA-1.5's token profile / llava-1.5-7b's shapes, see bench/llava_profile.py).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llava_profile


def model_folder(profile: str, workdir: Path, device: str, dtype: str) -> Path:
    """A folder both engines load (CLIP keys in the Hub layout vLLM reads)."""
    from mmspubench.eval.backends.vllm.layout import to_vllm_layout
    from mmspubench.eval.bundled import bundled_model_dir

    folder = workdir / profile
    if profile == "bundled":
        shutil.copytree(bundled_model_dir(), folder)
    else:
        shape = llava_profile.LLAVA_7B if profile == "llava-7b" else llava_profile.CPU_REALISTIC
        model, processor = llava_profile.build_llava(shape, device=device, dtype=dtype)
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
        del model
        _free()
    return to_vllm_layout(folder)


def _free() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def load_items(n: int) -> list[Any]:
    """The first ``n`` items of the bundled synthetic split (repeated when it has fewer)."""
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import data

    dataset = str(default_dataset_dir())
    ds, _ = load_pinned(dataset, "test")
    ids = data.item_ids(ds, None)
    items = list(data.iter_items(ds, ids, dataset))
    return [items[i % len(items)] for i in range(n)]


def cgla_calls(model: Any, items: list[Any], batch: int) -> list[tuple[Any, ...]]:
    """The CGLA score calls the runner makes for ``items`` in chunks of ``batch`` (same requests)."""
    from mmspubench.eval import prompts
    from mmspubench.eval.protocol import ScoreRequest

    calls = []
    for first in range(0, len(items), batch):
        calls.append(
            tuple(
                ScoreRequest(item.pil_image, model.render(prompts.cgla_prompt(attribute)), continuation)
                for item in items[first : first + batch]
                for continuation in [prompts.cgla_continuation(item.class_name)]
                for attribute in (*item.core_attributes, *item.spurious_attributes)
            )
        )
    return calls


def _cache_counts(model: Any) -> dict[str, Any] | None:
    info = getattr(model, "backend_info", None)
    return dict(info["prefix_cache"]) if isinstance(info, dict) and "prefix_cache" in info else None


def time_engine(model: Any, items: list[Any], batch: int, max_new_tokens: int) -> dict[str, Any]:
    """Warm up on one chunk, then run accuracy (generate) and CGLA over ``items`` in chunks of
    ``batch``; for vLLM also the scoring requests' cache counts of the timed part."""
    from mmspubench.eval import prompts
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.runner import Clock, evaluate_items

    config = RunConfig(
        model="bench", dataset="bench", max_new_tokens=max_new_tokens, prompts=prompts.prompt_spec()
    )
    evaluate_items(model, items[: min(batch, 2)], config)
    reset = getattr(getattr(model, "llm", None), "reset_prefix_cache", None)
    if reset is not None:  # vLLM: the warm-up's prompts are not left in the cache for the timed part
        reset()
    before = _cache_counts(model)
    clock = Clock()
    results = []
    for first in range(0, len(items), batch):
        results.extend(evaluate_items(model, items[first : first + batch], config, clock))
    cgls = [c.cgl for r in results for c in r.conditions]
    after = _cache_counts(model)
    tokens = None
    if before is not None and after is not None:
        tokens = {
            k: after[k] - before[k] for k in ("requests", "computed_prompt_tokens", "rescored_requests")
        }
    else:  # transformers: the tokens its scorer feeds (bench/score_speed.py's count)
        from score_speed import token_counts

        plain, fast, minimum = token_counts(model, [c for c in cgla_calls(model, items, batch) if c])
        fed = plain if model.scorer == "plain" else fast
        tokens = {"computed_prompt_tokens": fed, "unique_minimum": minimum}
    return {
        "tokens": tokens,
        "accuracy_ips": len(items) / clock.accuracy_seconds,
        "cgla_ips": len(items) / clock.cgla_seconds,
        "cgls": cgls,
        "predictions": [r.prediction for r in results],
    }


def run_engine(name: str, folder: Path, args: argparse.Namespace) -> Any:
    from mmspubench.eval.backends.vllm import parse_engine_args
    from mmspubench.eval.config import with_options

    backend = "vllm" if name.startswith("vllm") else "transformers"
    engine_args = parse_engine_args(args.engine_args) if backend == "vllm" else {}
    if name == "vllm-no-cache-read":
        engine_args = {**engine_args, "enable_prefix_caching": False}
    engine = {"engine_args": json.dumps(engine_args)} if engine_args else {}
    config = with_options(
        None,
        {
            "model": str(folder),
            "backend": backend,
            "dtype": args.dtype,
            "batch_size": args.batch_size,
            "scorer": "plain" if name == "transformers-plain" else "fast",
            **engine,
        },
    )
    return config.plugin().load(config, args.device)


ENGINES = ("transformers-plain", "transformers-fast", "vllm", "vllm-no-cache-read")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profile", choices=("bundled", "realistic", "llava-7b"), default="bundled")
    parser.add_argument("--items", type=int, default=40, help="timed items (default 40)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-size", type=int, default=8, help="transformers: items per chunk (default 8)")
    parser.add_argument("--vllm-chunk", type=int, default=256, help="vLLM: items per chunk (default 256)")
    parser.add_argument("--engine-args", help="vLLM: JSON of more vllm.LLM arguments")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--extrapolate", type=int, help="also print minutes for this many items")
    args = parser.parse_args(argv)
    items = load_items(args.items)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mmspubench-engines-") as tmp:
        folder = model_folder(args.profile, Path(tmp), args.device, args.dtype)
        for name in ENGINES:
            start = time.perf_counter()
            model = run_engine(name, folder, args)
            load = time.perf_counter() - start
            batch = args.vllm_chunk if name.startswith("vllm") else args.batch_size
            rows.append((name, load, time_engine(model, items, batch, args.max_new_tokens)))
            if hasattr(model, "close"):  # vLLM: stop the engine's processes now, not at exit
                model.close()
            del model
            _free()
    print_table(rows, args)
    return 0


def print_table(rows: list[tuple[str, float, dict[str, Any]]], args: argparse.Namespace) -> None:
    plain = rows[0][2]
    print(f"\n## {args.profile}, {args.device} {args.dtype}, {args.items} items (generate mode + CGLA)\n")
    head = (
        "| engine | load s | accuracy items/s | CGLA items/s | max abs CGL diff vs plain | same predictions |"
    )
    if args.extrapolate:
        head += f" minutes for {args.extrapolate} items |"
    print(head)
    print("|---|---:|---:|---:|---:|---|" + ("---:|" if args.extrapolate else ""))
    for name, load, r in rows:
        diff = max(abs(a - b) for a, b in zip(r["cgls"], plain["cgls"], strict=True))
        line = (
            f"| {name} | {load:.1f} | {r['accuracy_ips']:.2f} | {r['cgla_ips']:.2f} | {diff:.2g} | "
            f"{r['predictions'] == plain['predictions']} |"
        )
        if args.extrapolate:
            minutes = args.extrapolate * (1 / r["accuracy_ips"] + 1 / r["cgla_ips"]) / 60
            line += f" {minutes:.1f} |"
        print(line)
    best_acc = max(rows, key=lambda row: row[2]["accuracy_ips"])[0]
    best_cgla = max(rows, key=lambda row: row[2]["cgla_ips"])[0]
    print(f"\nfastest accuracy part: {best_acc}; fastest CGLA part: {best_cgla}")
    print_tokens(rows, args)


def print_tokens(rows: list[tuple[str, float, dict[str, Any]]], args: argparse.Namespace) -> None:
    """The CGLA rows: items/s and computed prompt tokens per item next to the unique minimum."""
    minimum = rows[1][2]["tokens"]["unique_minimum"] / args.items  # same tokens for every engine
    print(f"\n## CGLA part: computed prompt tokens per item (unique minimum {minimum:.0f})\n")
    print(
        "| engine | CGLA items/s | computed tokens/item | unique minimum/item | computed / minimum | rescored |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, _load, r in rows[1:]:
        t = r["tokens"]
        per_item = t["computed_prompt_tokens"] / args.items
        rescored = f"{t['rescored_requests'] / t['requests']:.1%}" if t.get("requests") else "-"
        print(
            f"| {name} | {r['cgla_ips']:.2f} | {per_item:.0f} | {minimum:.0f} | {per_item / minimum:.2f} | {rescored} |"
        )
    rate = {name: r["cgla_ips"] for name, _load, r in rows}
    print(
        f"\nvLLM CGLA, cache read / not read: {rate['vllm'] / rate['vllm-no-cache-read']:.2f}x; "
        f"cache read / transformers-fast: {rate['vllm'] / rate['transformers-fast']:.2f}x"
    )


if __name__ == "__main__":  # vLLM starts worker processes: the engine is created under this guard
    from mmspubench.eval.backends.vllm.engine import exit_without_teardown

    status = main()
    exit_without_teardown(status)  # everything is written and the engine stopped
