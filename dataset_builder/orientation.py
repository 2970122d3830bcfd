"""The one orientation every reader shows: the one ``mmspubench eval`` shows.

``eval`` decodes images through ``datasets``' ``Image`` feature, which applies a file's EXIF
orientation (``PIL.ImageOps.exif_transpose``; PIL reads the tag from EXIF, else from XMP). A reader
that does not (PIL's plain ``open``, as VLMEvalKit and our Inspect provider use; some servers)
would show such a file turned or mirrored. So image sizes are compared as shown (``build``, eval's
dataset check), and a file whose orientation changes its pixels reaches another harness (the
VLMEvalKit TSV, Inspect's samples, the ``inspect`` config) as the PNG of the pixels eval shows:
lossless, with no orientation left to apply. A file without such a tag is passed on as stored.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image

ORIENTATION_TAG = 0x0112
"""EXIF's Orientation tag."""
TURNING = range(2, 9)
"""Orientation values that change the pixels shown (``exif_transpose``'s table; 1 is "as stored")."""
SWAPPING = range(5, 9)
"""Orientation values that swap width and height."""


def orientation(image: Image) -> int:
    """The orientation ``exif_transpose`` applies to ``image`` (read from its header): 1 for none."""
    value = image.getexif().get(ORIENTATION_TAG, 1)
    return value if isinstance(value, int) and value in TURNING else 1


@dataclass(frozen=True, slots=True)
class Look:
    """An image's size as shown and its mode: what a counterfactual must share with its item."""

    size: tuple[int, int]
    """Width and height as shown (after the orientation)."""
    mode: str
    """PIL's mode of the stored image (``RGB``, ``L``...)."""
    orientation: int
    """The orientation applied (1: none)."""

    def same(self, other: Look) -> bool:
        """Whether both show the same size and mode (the orientations may differ)."""
        return (self.size, self.mode) == (other.size, other.mode)

    def __str__(self) -> str:
        turned = f" as shown (EXIF orientation {self.orientation})" if self.orientation != 1 else ""
        return f"{self.size[0]}x{self.size[1]} {self.mode}{turned}"


def look(image: Image) -> Look:
    """``image``'s :class:`Look`, from its header only."""
    turn = orientation(image)
    width, height = image.size
    return Look((height, width) if turn in SWAPPING else (width, height), image.mode, turn)


def as_shown(data: bytes, shown: Image | None = None) -> bytes:
    """The encoded image ``data`` as a reader that ignores EXIF must get it to show what eval shows:
    ``data`` itself when no orientation changes its pixels, else the PNG of the pixels shown
    (``shown``, eval's decoded picture, when the caller has it; else decoded here as eval does)."""
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as image:
        if orientation(image) == 1:
            return data
        picture = shown if shown is not None else ImageOps.exif_transpose(image).convert("RGB")
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        return buffer.getvalue()
