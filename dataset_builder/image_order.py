"""Pair records with images by position, in the order ``datasets`` yields a release's images.

The published release names no image in its records and does not name its images by id: the
public code zips ``load_dataset(repo, split="train")`` (an imagefolder) with ``annotation.json``.
This module reproduces exactly that order by asking ``datasets`` itself (its imagefolder builder,
run on the release folder), keeps the images under the standard image folders of a release, and
pairs record i with image i, only when the counts are equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mmspubench.dataset_builder.images import IMAGE_SUFFIXES
from mmspubench.dataset_builder.raw import ANNOTATION_FILE, IMAGES_DIR, RawEntry
from mmspubench.errors import MMSpuBenchError

IMAGE_DIRS: tuple[str, ...] = ("data", "images", "image", "imgs", "img")
"""Top-level folders whose images (at any depth: ``data/images/`` is under ``data/``) are paired."""
BY_ID = "by_id"
BY_POSITION = "by_position"
MATCHING_NOTES: dict[str, str] = {
    BY_ID: "Each record's image is the file its `image` field names, else `data/images/<id>.png|.jpg|.jpeg`.",
    BY_POSITION: (
        "The records name no image and no image is named by id: record *i* of `annotation.json` "
        "was paired with the *i*-th image in the order `datasets` yields the release's images as an "
        'imagefolder (`load_dataset(release, split="train")`, the order the public code zips them '
        f"in), over the folders {', '.join(f'`{d}/`' for d in IMAGE_DIRS)}; the counts were equal."
    ),
}
"""What the dataset card says about how images were matched to records."""


def _found_by_id(release: Path, record_id: str) -> bool:
    return any((release / IMAGES_DIR / f"{record_id}{suffix}").exists() for suffix in IMAGE_SUFFIXES)


def needs_positional_pairing(release: Path, entries: Sequence[RawEntry]) -> bool:
    """True when no record names an image and no record's image is found by id."""
    return bool(entries) and not any("image" in e.fields or _found_by_id(release, e.id) for e in entries)


def imagefolder_order(release: Path) -> list[str]:
    """Release-relative paths of the images ``load_dataset(release, split="train")`` yields, in its
    order, restricted to :data:`IMAGE_DIRS`."""
    import datasets
    from mmspubench.dataset_builder.defaults import cache_root

    where = str(release)
    try:
        # datasets' own cache of what it read lives with ours (it holds paths only, not image bytes).
        ds = datasets.load_dataset(where, split="train", cache_dir=str(cache_root() / "imagefolder"))
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetGenerationError) as err:
        raise MMSpuBenchError(
            f"{where}: cannot read the release's images as an imagefolder (split 'train'): {err}"
        ) from None
    assert isinstance(ds, datasets.Dataset)
    column = next((name for name, f in ds.features.items() if isinstance(f, datasets.Image)), None)
    if column is None:
        raise MMSpuBenchError(f"{where}: datasets reads no image column from the release ({ds.features})")
    paths = ds.cast_column(column, datasets.Image(decode=False))[column]
    root = release.resolve()
    order = []
    for value in paths:
        path = Path(str(value.get("path") or ""))
        if path.is_absolute() and not path.resolve().is_relative_to(root):
            continue  # not a file of this release (resolve_image would refuse it anyway)
        rel = path.resolve().relative_to(root) if path.is_absolute() else path
        if rel.parts and rel.parts[0] in IMAGE_DIRS:
            order.append(rel.as_posix())
    return order


def pair_by_position(release: Path, entries: Sequence[RawEntry]) -> list[str]:
    """The image of each entry (release-relative path), entry i getting the i-th image."""
    order = imagefolder_order(release)
    if len(order) != len(entries):
        raise MMSpuBenchError(
            f"{release / ANNOTATION_FILE}: {len(entries)} records but {len(order)} images in "
            f"{', '.join(d + '/' for d in IMAGE_DIRS)} (the order datasets yields them); the records "
            "name no image and none is named by id, so pairing by position needs equal counts"
        )
    return order
