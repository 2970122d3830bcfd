"""Find and check a record's image inside the raw release.

The path a record names must be relative, carry no URL scheme and no ``..``, and resolve inside
the release folder (symlinks included). The image must be PNG or JPEG, decode fully, and stay
under a decompression-bomb pixel limit. Nothing decoded is kept: each check opens, decodes and
closes, so validating a large release does not grow memory.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path, PurePosixPath, PureWindowsPath

from mmspubench.dataset_builder.files import MAX_IMAGE_BYTES, open_regular, shown
from mmspubench.dataset_builder.orientation import look
from mmspubench.dataset_builder.raw import IMAGES_DIR
from mmspubench.errors import MMSpuBenchError, record_error
from PIL import Image, UnidentifiedImageError

MAX_IMAGE_PIXELS = 89_478_485
"""Default pixel limit (Pillow's own default): larger images are refused as decompression bombs."""

IMAGE_FORMATS: tuple[str, ...] = ("PNG", "JPEG", "MPO")
"""Accepted image formats, as Pillow names them (``MPO``: a multi-picture JPEG, as phones write;
readers decode its first frame)."""

IMAGE_SUFFIXES: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".PNG", ".JPG", ".JPEG")
"""File suffixes tried when an image is found by record id."""

_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def resolve_image(release: Path, file: str, record_id: str, named: object | None) -> Path:
    """The absolute path of a record's image: the ``image`` field if given, else found by id."""
    root = release.resolve()
    if named is None:
        return _find_by_id(root, file, record_id)
    if not isinstance(named, str) or not named.strip():
        raise record_error(file, record_id, "image", f"value {named!r} is not a non-empty relative path")
    _check_safe(file, record_id, named)
    # A name is taken relative to the release root first, then to data/images/.
    candidates = [root / named, root / IMAGES_DIR / named]
    for candidate in candidates:
        if candidate.exists() or candidate.is_symlink():
            return _inside(root, file, record_id, candidate)
    raise record_error(
        file,
        record_id,
        "image",
        f"image {named!r} not found (looked in {shown(root)} and {shown(root / IMAGES_DIR)})",
    )


def _check_safe(file: str, record_id: str, named: str) -> None:
    if (
        PurePosixPath(named).is_absolute()
        or PureWindowsPath(named).is_absolute()
        or named.startswith(("/", "\\"))
    ):
        raise record_error(
            file, record_id, "image", f"path {named!r} is absolute; expected a path relative to the release"
        )
    if _URL_SCHEME.match(named) or "://" in named:
        raise record_error(
            file, record_id, "image", f"path {named!r} has a URL scheme; expected a relative file path"
        )
    if ".." in re.split(r"[/\\]", named):
        raise record_error(
            file, record_id, "image", f"path {named!r} contains '..'; expected a path inside the release"
        )


def _inside(root: Path, file: str, record_id: str, candidate: Path) -> Path:
    try:
        resolved = candidate.resolve()
        is_file = resolved.is_file()
    except (OSError, RuntimeError) as err:  # a symlink loop: RuntimeError before 3.13, OSError after
        raise record_error(
            file, record_id, "image", f"path {str(candidate)!r} cannot be resolved ({err})"
        ) from None
    if not resolved.is_relative_to(root):
        raise record_error(
            file,
            record_id,
            "image",
            f"path {str(candidate)!r} resolves outside the release folder {shown(root)}",
        )
    hidden = [part for part in resolved.relative_to(root).parts if part.startswith(".")]
    if hidden:
        # The dataset's content hash skips dot-paths; an image there would not pin the build.
        raise record_error(
            file,
            record_id,
            "image",
            f"path {str(candidate)!r} lies in the hidden path {hidden[0]!r}; move the image out of dot-folders",
        )
    if not is_file:
        raise record_error(file, record_id, "image", f"{shown(resolved)} is not a file")
    return resolved


def _find_by_id(root: Path, file: str, record_id: str) -> Path:
    _check_safe(file, record_id, record_id)
    folder = root / IMAGES_DIR
    found = [
        folder / f"{record_id}{suffix}"
        for suffix in IMAGE_SUFFIXES
        if (folder / f"{record_id}{suffix}").is_file()
    ]
    # Case-insensitive file systems report the same file under several suffix spellings.
    unique = sorted({p.resolve() for p in found})
    if not unique:
        raise record_error(
            file, record_id, "image", f"no 'image' field and no {record_id}.png/.jpg/.jpeg in {shown(folder)}"
        )
    if len(unique) > 1:
        names = ", ".join(p.name for p in unique)
        raise record_error(
            file, record_id, "image", f"several images match the id ({names}); name one in the 'image' field"
        )
    return _inside(root, file, record_id, unique[0])


def check_image(
    path: Path, file: str, record_id: str, *, max_pixels: int = MAX_IMAGE_PIXELS
) -> tuple[int, int]:
    """Open, verify and fully decode the image once, and read its orientation as ``mmspubench eval``
    does (a broken EXIF or XMP block stops eval's decoder too); return its ``(width, height)`` as
    shown (:mod:`~mmspubench.dataset_builder.orientation`)."""
    try:
        handle = open_regular(path, MAX_IMAGE_BYTES, "an image")
    except MMSpuBenchError as err:  # a FIFO, a device, a file over the byte limit
        raise record_error(file, record_id, "image", str(err)) from None
    try:
        with warnings.catch_warnings(), handle:
            # We apply our own limit below; Pillow's warning would only duplicate it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(handle) as im:
                size, fmt = im.size, im.format
                _check_header(path, file, record_id, size, fmt, max_pixels)
                im.verify()
            handle.seek(0)
            with Image.open(handle) as im:
                im.load()
                size = look(im).size
    except Image.DecompressionBombError as err:
        raise record_error(file, record_id, "image", f"{shown(path)}: over the pixel limit ({err})") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:
        raise record_error(
            file, record_id, "image", f"{shown(path)}: unreadable or corrupt image ({err})"
        ) from None
    return size


def _check_header(
    path: Path, file: str, record_id: str, size: tuple[int, int], fmt: str | None, max_pixels: int
) -> None:
    if fmt not in IMAGE_FORMATS:
        raise record_error(file, record_id, "image", f"{shown(path)}: format {fmt}; expected PNG or JPEG")
    width, height = size
    if width * height > max_pixels:
        raise record_error(
            file,
            record_id,
            "image",
            f"{shown(path)}: {width}x{height} = {width * height} pixels is over the limit of {max_pixels} (decompression bomb)",
        )
