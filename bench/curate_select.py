"""``curate select``: correctness on N images, memory at N vs 4N, and throughput of the paper's CLIP size.

    python bench/curate_select.py [--n 1000] [--speed-images 32]

1. Writes a class-folder tree of N random pictures (8 classes) and a tiny random CLIP, runs
   ``mmspubench curate select`` on it and checks that the kept images are exactly those an
   independent computation (one full ``CLIPModel`` forward per image, numpy ranks) keeps.
2. Runs select on N and on 4N images, each in a fresh Python process that reports its own peak
   RSS (``ru_maxrss``); images stream in batches, so the ratio should stay within 1.3.
3. Times select's zero-shot step with a randomly initialised CLIP of the size of
   CLIP-ViT-L/14@336px (same architecture and input size as the paper's selector, so the same
   cost) on this machine's CPU and prints images/s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RSS_RATIO_TARGET = 1.3
K, L = 2, 5

CHILD = """
import resource, sys
from pathlib import Path
from mmspubench.curate.select import SelectConfig, run_select
data, clip, out = sys.argv[1:4]
run_select(SelectConfig(data=data, source_name="ObjectNet", clip=clip, k=2, l=5, batch_size=32), Path(out))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def run_child(data: Path, clip: Path, out: Path) -> int:
    """Peak RSS in KiB of one select run in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(data), str(clip), str(out)],
        capture_output=True, text=True, check=True,
        env={"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return int(done.stdout.strip().splitlines()[-1])


def check_against_independent(tree: Path, clip: Path, cand: Path) -> tuple[int, int]:
    from tests.curate.fixtures import independent_ranks

    ranks = independent_ranks(clip, tree)
    expected = {path for path, r in ranks.items() if K < r["rank"] <= L}
    lines = [json.loads(x) for x in (cand / "candidates.jsonl").read_text().splitlines()]
    kept = {c["image"] for c in lines}
    if kept != expected or any(c["true_rank"] != ranks[c["image"]]["rank"] for c in lines):
        raise SystemExit(f"MISMATCH: {len(kept ^ expected)} images differ from the independent computation")
    return len(kept), len(ranks)


def speed(n_images: int, batch: int) -> float:
    """Images/s of the zero-shot step with a CLIP-ViT-L/14@336px-sized random model (CPU)."""
    import torch
    from mmspubench.curate.clip import ZeroShotClip, rank_rows
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from tests.curate import fixtures
    from tests.curate.fixtures import CLASSES, make_picture

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = CLIPProcessor.from_pretrained(fixtures.build_tiny_clip(Path(tmp) / "t")).tokenizer
    config = CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 768, "intermediate_size": 3072,
                     "num_hidden_layers": 12, "num_attention_heads": 12, "max_position_embeddings": 77,
                     "eos_token_id": tokenizer.eos_token_id, "bos_token_id": tokenizer.bos_token_id,
                     "pad_token_id": tokenizer.pad_token_id},
        vision_config={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                       "num_attention_heads": 16, "image_size": 336, "patch_size": 14},
        projection_dim=768,
    )  # fmt: skip
    model = CLIPModel(config).eval()
    side = {"height": 336, "width": 336}
    processor = CLIPProcessor(CLIPImageProcessor(size={"shortest_edge": 336}, crop_size=side), tokenizer)
    clip = ZeroShotClip(model, processor, CLASSES, "a photo of a {}.")
    images = [make_picture(i, size=400) for i in range(n_images)]
    clip.logits(images[:2])  # warm-up
    start = time.perf_counter()
    for first in range(0, n_images, batch):
        chunk = images[first : first + batch]
        rank_rows(clip.logits(chunk), [0] * len(chunk), CLASSES)
    print(
        f"  threads: {torch.get_num_threads()}, parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M"
    )
    return n_images / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="images of the smaller run (default 1000)")
    parser.add_argument(
        "--speed-images", type=int, default=32, help="images timed with the ViT-L/14@336 size"
    )
    args = parser.parse_args()
    from tests.curate.fixtures import build_tiny_clip, make_class_tree

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clip = build_tiny_clip(root / "clip")
        rss = {}
        for n in (args.n, 4 * args.n):
            tree = make_class_tree(root / f"tree{n}", n // 8)
            started = time.perf_counter()
            rss[n] = run_child(tree, clip, root / f"cand{n}")
            seconds = time.perf_counter() - started
            print(
                f"select on {n} images (tiny CLIP): peak RSS {rss[n] / 1024:.0f} MiB, {seconds:.1f}s in all"
            )
            if n == args.n:
                kept, seen = check_against_independent(tree, clip, root / f"cand{n}")
                print(f"  kept {kept} of {seen}: exactly the images the independent computation keeps")
        ratio = rss[4 * args.n] / rss[args.n]
        verdict = "OK" if ratio <= RSS_RATIO_TARGET else "OVER TARGET"
        print(f"peak RSS ratio 4N/N: {ratio:.3f} (target <= {RSS_RATIO_TARGET}: {verdict})")
    rate = speed(args.speed_images, batch=8)
    print(f"CLIP-ViT-L/14@336px-sized select on this CPU: {rate:.2f} images/s")


if __name__ == "__main__":
    main()
