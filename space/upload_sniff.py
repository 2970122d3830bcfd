"""Check a visitor's upload on its bytes before anything decodes it.

The Space takes uploads as plain files (``gr.File``), so gradio never decodes them: this module
reads the file's first bytes to learn its real format (a GIF renamed ``.png`` is a GIF), its size,
and the pixel count from the header, and only then does ``live.load_upload`` decode it. Every
refusal is one ``MMSpuBenchError`` line that the page shows.
"""

from __future__ import annotations

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
)
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
    return "unknown (not an image)"


def check_upload(path: str | Path | None, max_bytes: int, max_pixels: int) -> tuple[Path, str]:
    """The upload's path and format, after the byte-level checks; raise with one line otherwise."""
    if path is None or not str(path):
        raise MMSpuBenchError("no image uploaded; upload a PNG, JPEG or WebP picture")
    file = Path(path)
    try:
        size = file.stat().st_size
        with open_regular(file, size, f"upload {file.name!r}") as handle:
            head = handle.read(_HEAD)
    except OSError as err:
        raise MMSpuBenchError(f"upload {file.name!r} cannot be read ({err.strerror})") from None
    if size > max_bytes:
        raise MMSpuBenchError(f"upload {file.name!r} is {size} bytes; at most {max_bytes} are accepted")
    fmt = sniff_format(head)
    if fmt not in ACCEPTED:
        raise MMSpuBenchError(
            f"upload {file.name!r} is a {fmt} file by its content; expected {', '.join(ACCEPTED)}"
        )
    _check_header(file, fmt, max_pixels)
    return file, fmt


def _check_header(file: Path, fmt: str, max_pixels: int) -> None:
    """Read the header only (no decoding): the format must agree and the pixel count stay bounded."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(file, formats=[fmt, "MPO"] if fmt == "JPEG" else [fmt]) as image:
                width, height, found = image.width, image.height, image.format
    except Image.DecompressionBombError:
        raise MMSpuBenchError(
            f"upload {file.name!r} has too many pixels; at most {max_pixels} are accepted"
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        raise MMSpuBenchError(
            f"upload {file.name!r} is not a readable {fmt} image ({type(err).__name__})"
        ) from None
    if (found == "MPO" and fmt != "JPEG") or (found != "MPO" and found != fmt):
        raise MMSpuBenchError(f"upload {file.name!r}: header says {found}, content says {fmt}; refusing it")
    if width * height > max_pixels:
        raise MMSpuBenchError(
            f"upload {file.name!r} is {width}x{height}; at most {max_pixels} pixels are accepted"
        )
