"""The benchmark as it is published, laid out in a temporary offline Hub cache.

The published repo is an imagefolder (images not named by id) plus an order-aligned
``annotation.json`` without ids whose options carry letter prefixes, and a card without split ids.
Each image is a flat colour encoding its file number, so a test can tell which image a record got.
File names are ``1.png`` ... ``12.png``: their lexicographic order (1, 10, 11, 12, 2, ...) differs
from their natural order. The cache is written as huggingface_hub writes it: blobs, a snapshot
of symlinks named by a 40-hex commit, and ``refs/main``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from PIL import Image

from tests.helpers import offline_hub

REPO_ID = "mmbench/MM-SpuBench"
COMMIT = "1234567890abcdef1234567890abcdef12345678"
N_IMAGES = 12
CLASSES = ("cat", "dog", "car", "cup")
CARD = """---
license: other
task_categories:
- visual-question-answering
---
# MM-SpuBench

Images in `data/`; the annotations in `annotation.json`, aligned by position.
"""


def mark_colour(number: int) -> tuple[int, int, int]:
    """The flat colour of image ``number``: red channel 10*number, a fixed green and blue."""
    return (10 * number, 77, 3)


def read_mark(image: Image.Image) -> int:
    """The file number an image of this fixture encodes."""
    red = image.convert("RGB").getpixel((0, 0))
    assert isinstance(red, tuple)
    return int(red[0]) // 10


def record(i: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The i-th record of the published annotation.json (no id, no image, prefixed choices)."""
    names = [CLASSES[(i + k) % 4] for k in range(4)]
    return {
        "question": f"Question {i}: which object is shown in front of the striped wall?",
        "choices": [f"{letter}. {name}" for letter, name in zip("ABCD", names, strict=True)],
        "answer": "A",
        "class": names[0],
        "core_attributes": [f"the shape of a {names[0]}"],
        "spurious_attributes": ["a striped wall", "bright light"],
        "spurious_types": ["BG", "LS"] if i % 2 else ["Texture"],
        "source": "ObjectNet",
        **(extra or {}),
    }


def write_release(root: Path, n_records: int = N_IMAGES, extra: dict[str, Any] | None = None) -> Path:
    """The published layout as plain files under ``root``."""
    (root / "data").mkdir(parents=True)
    for number in range(1, N_IMAGES + 1):
        Image.new("RGB", (16, 16), mark_colour(number)).save(root / "data" / f"{number}.png")
    records = [record(i, extra) for i in range(n_records)]
    (root / "annotation.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
    (root / "README.md").write_text(CARD, encoding="utf-8")
    return root


def put_in_hub_cache(folder: Path, repo_id: str = REPO_ID, commit: str = COMMIT) -> Path:
    """Lay ``folder`` out as the cached snapshot ``commit`` of the dataset ``repo_id``; return it."""
    return offline_hub.put_in_hub_cache(folder, repo_id, commit)


def published(tmp_path: Path, **kwargs: Any) -> Path:
    """Write the published release and cache it as ``REPO_ID`` at ``COMMIT``; return the snapshot."""
    return put_in_hub_cache(write_release(tmp_path / "published", **kwargs))


def fetch_as_online(monkeypatch: Any, where: Path) -> list[list[str]]:
    """Make ``snapshot_download`` fetch as it does online: only the files its ``allow_patterns``
    match, into a folder of their own (offline it returns the cached snapshot whole). Returns the
    list of pattern lists it was called with."""
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.utils import filter_repo_objects

    calls: list[list[str]] = []

    def fetch(repo_id: str, *, repo_type: str, revision: str | None, allow_patterns: list[str]) -> str:
        calls.append(list(allow_patterns))
        repo = Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}"
        commit = revision if revision and len(revision) == 40 else (repo / "refs" / "main").read_text()
        snapshot = repo / "snapshots" / commit
        files = [p.relative_to(snapshot).as_posix() for p in sorted(snapshot.rglob("*")) if p.is_file()]
        fetched = where / f"fetch-{len(calls)}" / commit
        for rel in filter_repo_objects(files, allow_patterns=allow_patterns):
            (fetched / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.realpath(snapshot / rel), fetched / rel)
        fetched.mkdir(parents=True, exist_ok=True)
        return str(fetched)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fetch)
    return calls
