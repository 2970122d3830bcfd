"""An offline Hugging Face Hub for tests: a repo laid out in the Hub cache as huggingface_hub writes
it (blobs, a snapshot of symlinks named by a 40-hex commit, ``refs/main``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path


def hub_cache() -> Path:
    """``$HF_HOME/hub`` (or the cache a test patched in), where huggingface_hub (offline) looks."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def put_in_hub_cache(folder: Path, repo_id: str, commit: str, repo_type: str = "dataset") -> Path:
    """Lay ``folder`` out as the cached snapshot ``commit`` of the ``repo_type`` repo ``repo_id``
    (``refs/main`` pointing at it); return the snapshot folder."""
    cache = hub_cache()
    # huggingface_hub reads HF_HOME once, at import: a test must point its cache at a temporary folder.
    assert Path(tempfile.gettempdir()).resolve() in cache.resolve().parents, (
        f"{cache}: not a temporary folder"
    )
    repo = cache / f"{repo_type}s--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    if repo.exists():
        shutil.rmtree(repo)
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / path.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot
