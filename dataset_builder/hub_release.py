"""A Hub dataset repo at one commit: our built layout, or a raw release built into the cache.

The published benchmark may hold a raw release (``annotation.json`` at the root plus images)
rather than the Parquet layout ``build`` writes. :func:`resolve_snapshot` asks the Hub (or, with
``HF_HUB_OFFLINE=1``, the local Hub cache) for the repo at a revision and fetches only
``annotation.json`` and the card first, which tell the two layouts apart (a card written by
``build`` wins over raw files left beside it) and pin the commit sha. A built
repo then fetches its card, ``eval.yaml`` and Parquet files; a raw release its annotation file,
card and images (and every file ``datasets``' imagefolder reads to order or label them). A raw
release is copied out of the Hub cache (whose snapshot files are symlinks into a blob store outside
the folder; each copy bounded by the size the file reports) and built once into
``$MMSPUBENCH_CACHE/hub/<org--name>/<sha>/``; both are checked against their cache records
before reuse (:mod:`~mmspubench.dataset_builder.cache_record`).
"""

from __future__ import annotations

import os
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
_CHUNK = 1 << 20
BUILT_PATTERNS: tuple[str, ...] = ("README.md", "eval.yaml", "data/*.parquet")
"""What a built repo needs for loading (the ``inspect`` config is inspect-ai's, not ours)."""
RAW_PATTERNS: tuple[str, ...] = (
    ANNOTATION_FILE,
    "README.md",
    *(f"*{suffix}" for suffix in IMAGE_SUFFIXES),
)
"""What a raw release needs at least: the records, the card (it may set how ``datasets`` reads the
images) and the images (``*`` matches across folders in the Hub's pattern filter); see
:func:`raw_patterns` for all that is fetched."""


def raw_patterns() -> tuple[str, ...]:
    """:data:`RAW_PATTERNS` and every file ``datasets``' imagefolder reads to order or label the
    images: its metadata files (``metadata.jsonl``, ``.csv``, ``.parquet``, at any depth: they set
    the order and the columns) and every image extension it reads (in either case, as it lowercases
    them). So the release copy yields its images to ``datasets`` as ``load_dataset(repo)`` does."""
    from datasets.packaged_modules.folder_based_builder.folder_based_builder import FolderBasedBuilder
    from datasets.packaged_modules.imagefolder.imagefolder import ImageFolder

    metadata = tuple(f"*{name}" for name in FolderBasedBuilder.METADATA_FILENAMES)
    extensions = sorted({case(ext) for ext in ImageFolder.EXTENSIONS for case in (str.lower, str.upper)})
    return tuple(dict.fromkeys((*RAW_PATTERNS, *metadata, *(f"*{ext}" for ext in extensions))))


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
    folder = _fetch(repo_id, sha, raw_patterns() if layout == "raw" else BUILT_PATTERNS)
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


def release_copy(snapshot: HubSnapshot) -> tuple[Path, str]:
    """The raw release of ``snapshot`` as plain files, and its content hash.

    Made once per commit and snapshot listing: a copy made while the snapshot was partial is made
    again once it holds more files, and a copy whose files changed since it was made (checked
    against its cache record) is made again from the snapshot.
    """
    from mmspubench.dataset_builder.cache_record import verified_hash, write_record

    target = hub_cache_dir(snapshot) / "release"
    listing = snapshot_listing(snapshot)
    made_from = {"repo": snapshot.repo_id, "revision": snapshot.revision, "files": listing}
    digest = verified_hash(target, made_from)
    if digest is not None:
        return target, digest

    def fill(work: Path) -> str:
        work.mkdir(parents=True)
        for rel in listing:
            _copy_bounded(snapshot.folder / rel, work / rel)
        return write_record(work, made_from)

    try:
        return target, replace_folder(target, fill)
    except OSError as err:
        raise MMSpuBenchError(
            f"{target}: cannot copy the release out of the Hub cache ({err.strerror or err})"
        ) from None


def snapshot_listing(snapshot: HubSnapshot) -> dict[str, str]:
    """Each file of the snapshot (relative path, dot files left out) and what it is: the blob a Hub
    cache link points at (named by the file's hash), else its size and modification time."""
    listing: dict[str, str] = {}
    for path in sorted(snapshot.folder.rglob("*")):
        rel = path.relative_to(snapshot.folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_symlink():
            listing[rel.as_posix()] = "link:" + os.readlink(path)
        elif path.is_file():
            info = path.stat()
            listing[rel.as_posix()] = f"file:{info.st_size}:{info.st_mtime_ns}"
    return listing


def _copy_bounded(source: Path, dest: Path) -> None:
    """Copy the regular file ``source`` leads to, never more bytes than it reports: a link to
    ``/dev/zero``, a FIFO or a directory, a link loop or a dangling link is one error line."""
    from mmspubench.dataset_builder.files import MAX_DATASET_FILE_BYTES, open_regular, shown

    try:
        real = source.resolve(strict=True)
    except (OSError, RuntimeError):  # a loop is RuntimeError before Python 3.13, OSError after
        raise MMSpuBenchError(
            f"{shown(source)}: a snapshot file whose link is a loop or leads nowhere; cannot copy the "
            "release out of the Hub cache (delete this snapshot from the Hub cache and fetch it again)"
        ) from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open_regular(real, MAX_DATASET_FILE_BYTES, f"a snapshot file ({source.name})") as handle:
        left = os.fstat(handle.fileno()).st_size
        with dest.open("wb") as out:
            while left > 0 and (chunk := handle.read(min(_CHUNK, left))):
                out.write(chunk)
                left -= len(chunk)


def built_for(snapshot: HubSnapshot, release_hash: str, unknown_keys: UnknownKeyPolicy) -> Path:
    """The cached build of a raw release snapshot, built now if it is not there yet.

    Keyed by commit and release hash; a build that dropped unknown keys is kept apart, so a later
    ``error`` load still refuses them. A cached build is used only when its content is what its
    cache record says it was when it was built (:mod:`~mmspubench.dataset_builder.cache_record`).
    """
    from mmspubench.dataset_builder.builder import BuildOptions, build_repo
    from mmspubench.dataset_builder.cache_record import verified_hash, write_record
    from mmspubench.dataset_builder.load import BUILD_FORMAT_VERSION

    name = f"built-{release_hash[:16]}" + ("-ignore" if unknown_keys == "ignore" else "")
    target = hub_cache_dir(snapshot) / name
    made_from = {"release_hash": release_hash, "unknown_keys": unknown_keys, "format": BUILD_FORMAT_VERSION}
    if verified_hash(target, made_from) is None:  # missing, half-written, edited or truncated: rebuilt
        release, _ = release_copy(snapshot)
        build_repo(release, target, overwrite=True, options=BuildOptions(unknown_keys=unknown_keys))
        write_record(target, made_from)
    return target
