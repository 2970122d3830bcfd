"""Check a visitor's upload on its bytes before anything decodes it.

The Space takes uploads as plain files (``gr.File``), so gradio never decodes them: this module
reads the file's first bytes to learn its real format (a GIF renamed ``.png`` is a GIF), its size,
and the pixel count from the header, and only then does ``live.load_upload`` decode it. Every
refusal is one ``MMSpuBenchError`` line that the page shows, naming the file as the visitor named
it: ``notes.png is not an image file (its content is text); upload a PNG, JPEG or WebP picture``.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from mmspubench.dataset_builder.files import open_regular
from mmspubench.errors import MMSpuBenchError

ACCEPTED: tuple[str, ...] = ("PNG", "JPEG", "WEBP")
"""Formats taken from visitors (a multi-picture JPEG, Pillow's ``MPO``, counts as JPEG)."""
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"%PDF", "PDF"),
    (b"PK\x03\x04", "ZIP"),
    (b"PK\x05\x06", "ZIP"),
)
IMAGE_FORMATS: frozenset[str] = frozenset({"PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF", "SVG"})
"""Formats :func:`sniff_format` knows that are pictures (the rest are not image files at all)."""
KIND: dict[str, str] = {"PDF": "a PDF document", "ZIP": "a ZIP archive", "TEXT": "text"}
"""What a non-image content is, as a refusal says it."""
WANTED = "upload a PNG, JPEG or WebP picture"
_HEAD = 512


def sniff_format(head: bytes) -> str:
    """The format the first bytes of a file show (``PNG``, ``JPEG``, ``WEBP``, ``GIF``, ``SVG``...)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    for signature, name in _SIGNATURES:
        if head.startswith(signature):
            return name
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<svg", b"<?xml", b"<!doctype svg")) or b"<svg" in text:
        return "SVG"
    if head and _is_text(head):
        return "TEXT"
    return "unknown (not an image)"


def _is_text(head: bytes) -> bool:
    """Whether the first bytes read as UTF-8 text (the last character may be cut by the read)."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 3:
            return False
        text = head[: err.start].decode("utf-8")
    return all(c.isprintable() or c in "\r\n\t" for c in text)


def shown_name(name: str) -> str:
    """A file's name as a message shows it: as typed, or quoted where it has odd characters or is long."""
    if name.isprintable() and name.strip() == name and name and len(name) <= 80:
        return name
    return repr(name[:80])


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MB" if count >= 2**20 else f"{count} bytes"


def check_upload(path: str | Path | None, max_bytes: int, max_pixels: int) -> tuple[Path, str]:
    """The upload's path and format, after the byte-level checks; raise with one line otherwise."""
    if path is None or not str(path):
        raise MMSpuBenchError(f"no image uploaded; {WANTED}")
    file = Path(path)
    name = shown_name(file.name)
    try:
        size = file.stat().st_size
        with open_regular(file, size, "an uploaded picture") as handle:
            head = handle.read(_HEAD)
    except OSError as err:
        raise MMSpuBenchError(f"{name} cannot be read ({err.strerror})") from None
    if size == 0:
        raise MMSpuBenchError(f"{name} is empty (0 bytes); {WANTED}")
    if size > max_bytes:
        raise MMSpuBenchError(f"{name} is {_size(size)}; pictures up to {_size(max_bytes)} are accepted")
    fmt = sniff_format(head)
    if fmt not in IMAGE_FORMATS:
        kind = f" (its content is {KIND[fmt]})" if fmt in KIND else ""
        raise MMSpuBenchError(f"{name} is not an image file{kind}; {WANTED}")
    if fmt not in ACCEPTED:
        article = "an" if fmt[0] in "AEFHILMNORSX" else "a"
        raise MMSpuBenchError(f"{name} is {article} {fmt} image; {WANTED}")
    _check_header(file, fmt, max_pixels)
    return file, fmt


def _check_header(file: Path, fmt: str, max_pixels: int) -> None:
    """Read the header only (no decoding): the format must agree and the pixel count stay bounded."""
    from PIL import Image, UnidentifiedImageError

    name = shown_name(file.name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(file, formats=[fmt, "MPO"] if fmt == "JPEG" else [fmt]) as image:
                width, height, found = image.width, image.height, image.format
    except Image.DecompressionBombError as err:
        # Pillow refuses it before saying its size; its message holds the pixel count.
        count = re.search(r"\((\d+) pixels\)", str(err))
        said = f" ({count.group(1)})" if count else ""
        raise MMSpuBenchError(
            f"{name} has too many pixels{said}; pictures up to {max_pixels} pixels are accepted"
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        raise MMSpuBenchError(f"{name} is not a readable {fmt} image ({type(err).__name__})") from None
    if (found == "MPO" and fmt != "JPEG") or (found != "MPO" and found != fmt):
        raise MMSpuBenchError(f"{name} is not a readable {fmt} image (its header says {found})")
    if width * height > max_pixels:
        raise MMSpuBenchError(
            f"{name} is {width}x{height} pixels; pictures up to {max_pixels} pixels are accepted"
        )
