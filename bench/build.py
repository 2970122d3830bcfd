"""Build throughput and peak memory for N and 4N items: ``python bench/build.py [--n N]``.

Each raw release is written first (by the synthetic generator, or as random-noise JPEGs that do
not compress, closer to photographs), then built by ``build_repo`` in a fresh Python process whose
own peak RSS (``ru_maxrss``) is reported, so one size's memory never leaks into the other's.
The build streams, so peak RSS at 4N should stay within 1.3x of that at N.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RSS_RATIO_TARGET = 1.3


def write_synth(raw: Path, n: int, image_size: int) -> None:
    """A synthetic release from the package's generator."""
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release

    write_release(raw, generate_items(n, seed=0, image_size=image_size))


def write_noise(raw: Path, n: int, image_size: int) -> None:
    """A release of random-noise JPEGs (about photo-sized files) with valid annotations."""
    import numpy as np
    from mmspubench.dataset_builder.schema import SOURCES, TYPE_NAMES
    from PIL import Image

    images = raw / "data" / "images"
    images.mkdir(parents=True)
    rng = np.random.default_rng(0)
    records = []
    for i in range(n):
        pixels = rng.integers(0, 256, size=(image_size, image_size * 4 // 3, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(images / f"{i:06d}.jpg", quality=90)
        records.append(
            {
                "id": f"{i:06d}",
                "question": f"What is the object in image {i}?",
                "options": [
                    f"A. option {i} {k}" if k == 0 else f"{'ABCD'[k]}. option {i} {k}" for k in range(4)
                ],
                "answer": "ABCD"[i % 4],
                "class_name": f"class {i % 50}",
                "core_attributes": ["round", "metal"],
                "spurious_attributes": ["on grass", "red light"],
                "spurious_types": [TYPE_NAMES[i % 9]],
                "source": SOURCES[i % 5],
            }
        )
    (raw / "annotation.json").write_text(json.dumps(records), encoding="utf-8")


def child(raw: Path, out: Path) -> None:
    """Run one build in this process and print its figures as JSON."""
    start = time.perf_counter()
    from mmspubench.dataset_builder.builder import build_repo

    import_seconds = time.perf_counter() - start
    start = time.perf_counter()
    build_repo(raw, out)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"seconds": seconds, "import_seconds": import_seconds, "peak_rss_mib": peak_kib / 1024}))


def measure(raw: Path, out: Path) -> dict[str, float]:
    """Build ``raw`` in a fresh interpreter; return its JSON figures."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(raw), str(out)], check=True, capture_output=True, text=True
    )
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=500, help="the smaller size N (the larger is 4N)")
    parser.add_argument("--image-size", type=int, default=256, help="image side in pixels")
    parser.add_argument(
        "--images", choices=("synth", "noise"), default="synth", help="how to draw the images"
    )
    parser.add_argument("--child", nargs=2, type=Path, metavar=("RAW", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    write = write_synth if args.images == "synth" else write_noise
    work = Path(tempfile.mkdtemp(prefix="mmspubench-bench-"))
    rows = []
    try:
        for n in (args.n, 4 * args.n):
            raw = work / f"raw-{n}"
            write(raw, n, args.image_size)
            image_mib = sum(p.stat().st_size for p in (raw / "data" / "images").iterdir()) / 2**20
            figures = measure(raw, work / f"repo-{n}")
            rows.append((n, image_mib, figures))
            shutil.rmtree(raw)
            shutil.rmtree(work / f"repo-{n}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"images: {args.images}, {args.image_size} px")
    print("| items | image data (MiB) | build (s) | items/s | peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|")
    for n, image_mib, f in rows:
        print(
            f"| {n} | {image_mib:.1f} | {f['seconds']:.2f} | {n / f['seconds']:.0f} | {f['peak_rss_mib']:.0f} |"
        )
    ratio = rows[1][2]["peak_rss_mib"] / rows[0][2]["peak_rss_mib"]
    verdict = "ok" if ratio <= RSS_RATIO_TARGET else "OVER TARGET"
    print(f"peak RSS 4N / N = {ratio:.2f} (target <= {RSS_RATIO_TARGET}): {verdict}")
    return 0 if ratio <= RSS_RATIO_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
