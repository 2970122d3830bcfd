"""A Hub dataset repo at one commit: our built layout, or a raw release built into the cache.

The published benchmark may hold a raw release (``annotation.json`` at the root plus images)
rather than the Parquet layout ``build`` writes. :func:`resolve_snapshot` asks the Hub (or, with
``HF_HUB_OFFLINE=1``, the local Hub cache) for the repo at a revision and fetches only
``annotation.json`` and the card first, which tell the two layouts apart (a card written by
``build`` wins over raw files left beside it) and pin the commit sha. A built
repo then fetches its card, ``eval.yaml`` and Parquet files; a raw release its annotation file,
card and images. A raw release is copied (hard links where possible) out of the Hub cache, whose
snapshot files are symlinks into a blob store outside the folder, and built once into
``$MMSPUBENCH_CACHE/hub/<org--name>/<sha>/``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mmspubench.dataset_builder.defaults import cache_root
from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.hub import hub_offline
from mmspubench.dataset_builder.images import IMAGE_SUFFIXES
from mmspubench.dataset_builder.raw import ANNOTATION_FILE, UnknownKeyPolicy
from mmspubench.errors import MMSpuBenchError

HubLayout = Literal["built", "raw"]
BUILT_PATTERNS: tuple[str, ...] = ("README.md", "eval.yaml", "data/*.parquet")
"""What a built repo needs for loading (the ``inspect`` config is inspect-ai's, not ours)."""
RAW_PATTERNS: tuple[str, ...] = (
    ANNOTATION_FILE,
    "README.md",
    *(f"*{suffix}" for suffix in IMAGE_SUFFIXES),
)
"""What a raw release needs: the records, the card (it may set how ``datasets`` reads the images)
and the images (``*`` matches across folders in the Hub's pattern filter)."""


@dataclass(frozen=True, slots=True)
class HubSnapshot:
    """A dataset repo at one commit, as found on the Hub or in the local Hub cache."""

    repo_id: str
    """``org/name``."""
    revision: str
    """The commit sha the asked-for revision resolved to."""
    folder: Path
    """The snapshot folder (files may be symlinks into the Hub cache's blob store)."""
    layout: HubLayout
    """``raw``: ``annotation.json`` at the root; ``built``: the Parquet layout of ``build``."""


def _fetch(repo_id: str, revision: str | None, patterns: tuple[str, ...]) -> Path:
    from huggingface_hub import snapshot_download
    from mmspubench.dataset_builder.load import network_errors

    at = f"@{revision}" if revision else ""
    try:
        return Path(
            snapshot_download(repo_id, repo_type="dataset", revision=revision, allow_patterns=list(patterns))
        )
    except ValueError as err:  # an invalid repo id or revision text
        raise MMSpuBenchError(f"{repo_id}{at}: not a valid Hub dataset id or revision ({err})") from None
    except network_errors() as err:
        hint = (
            " (offline mode is on and this revision is not in the local Hub cache)" if hub_offline() else ""
        )
        raise MMSpuBenchError(
            f"{repo_id}{at}: Hub dataset not found or not reachable{hint}; pass a local built folder or raw "
            f"release instead ({type(err).__name__})"
        ) from None


def resolve_snapshot(repo_id: str, revision: str | None = None, *, fetch_data: bool = True) -> HubSnapshot:
    """The repo at ``revision`` (default: ``main``), its files fetched for loading (with
    ``fetch_data=False`` only ``annotation.json``, if the repo has one)."""
    probe = _fetch(repo_id, revision, (ANNOTATION_FILE, "README.md"))
    sha = probe.name
    layout: HubLayout = "raw" if (probe / ANNOTATION_FILE).is_file() and not _built_card(probe) else "built"
    if not fetch_data:
        return HubSnapshot(repo_id, sha, probe, layout)
    folder = _fetch(repo_id, sha, RAW_PATTERNS if layout == "raw" else BUILT_PATTERNS)
    return HubSnapshot(repo_id, sha, folder, layout)


def _built_card(folder: Path) -> bool:
    """Whether the card is one ``build`` wrote (it declares the split ids): then the repo's Parquet
    files are the benchmark, even if the raw release's files were left beside them."""
    from mmspubench.dataset_builder.split_ids import CARD_KEY

    card = folder / "README.md"
    try:
        head = card.read_text(encoding="utf-8").split("\n---", 1)[0] if card.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return False
    return f"\n{CARD_KEY}:" in head


def hub_cache_dir(snapshot: HubSnapshot) -> Path:
    """``$MMSPUBENCH_CACHE/hub/<org--name>/<sha>``: what this package derives from that commit."""
    return cache_root() / "hub" / snapshot.repo_id.replace("/", "--") / snapshot.revision


def release_copy(snapshot: HubSnapshot) -> Path:
    """The raw release of ``snapshot`` as plain files (made once per commit)."""
    target = hub_cache_dir(snapshot) / "release"
    if (target / ANNOTATION_FILE).is_file():
        return target

    def fill(work: Path) -> None:
        for path in sorted(snapshot.folder.rglob("*")):
            rel = path.relative_to(snapshot.folder)
            if path.is_dir() or any(part.startswith(".") for part in rel.parts):
                continue
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(path.resolve(), dest)

    try:
        replace_folder(target, fill)
    except OSError as err:
        raise MMSpuBenchError(
            f"{target}: cannot copy the release out of the Hub cache ({err.strerror or err})"
        ) from None
    return target


def _link_or_copy(source: Path, dest: Path) -> None:
    try:
        os.link(source, dest)
    except OSError:  # another file system, or links not allowed: a copy is as good
        shutil.copyfile(source, dest)


def built_for(snapshot: HubSnapshot, release_hash: str, unknown_keys: UnknownKeyPolicy) -> Path:
    """The cached build of a raw release snapshot, built now if it is not there yet.

    Keyed by commit and release hash; a build that dropped unknown keys is kept apart, so a later
    ``error`` load still refuses them.
    """
    from mmspubench.dataset_builder.builder import BuildOptions, build_repo

    name = f"built-{release_hash[:16]}" + ("-ignore" if unknown_keys == "ignore" else "")
    target = hub_cache_dir(snapshot) / name
    if not (target / "README.md").is_file():
        release = release_copy(snapshot)
        build_repo(release, target, overwrite=True, options=BuildOptions(unknown_keys=unknown_keys))
    return target
