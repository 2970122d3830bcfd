"""Image interventions: deterministic photometric transforms of an item's image.

Each intervention changes one visual channel and keeps every position, so a question about where
things are stays true (no crop, flip or rotation). Asking an item again with its transformed image
shows how much the answer depends on that channel.

Every transform takes a PIL image and returns a new RGB image of the same size. A source in another
mode is first converted with ``Image.convert("RGB")`` (a palette is expanded, gray is copied to the
three channels, alpha is dropped, not composited); everything after that is numpy integer
arithmetic, so a transform gives the same pixels on every machine and for every supported Pillow
and numpy (no Pillow filters or ImageOps, no numpy transcendental functions, no numpy.random
distributions; a slow test compares the digests across versions):

``grayscale``
    ITU-R 601 luma ``Y = (299 R + 587 G + 114 B + 500) // 1000``, written to all three channels.
``blur``
    Gaussian blur with ``sigma = BLUR_SIGMA_PER_SIDE * min(width, height)`` (relative to the shorter
    side, the side most processors resize to), taps ``k = -r..r`` with ``r = ceil(3 sigma)``.
    Weights ``exp(-k**2 / (2 sigma**2))`` (Python's ``math.exp``, the only float function used: its
    last-bit differences vanish in the quantisation) are rounded to integers that sum to ``2**16``
    (the rounding residue goes to the centre tap); the rows then the columns are convolved in int64
    and rounded once, half up. Edges are clamped (the edge pixel repeats).
``equalize``
    Per channel, with ``h`` its histogram, ``c(v) = h(0) + ... + h(v)``, ``c_min`` the count of its
    smallest value and ``N`` its pixel count: ``v -> round_half_up(255 (c(v) - c_min) / (N - c_min))``.
    A constant channel (``N == c_min``) is left unchanged.
``noise``
    Adds to every channel value an integer uniform in ``-A..A`` (``A = NOISE_AMPLITUDE``), then clips
    to 0..255. The values, in row-major order (R, G, B per pixel), come from the 32-bit halves ``u``
    of ``PCG64(seed).random_raw`` (low half first) by multiply-shift, ``((u * (2 A + 1)) >> 32) - A``: uniform to within ``2**-32``. Unclipped,
    the mean absolute change is ``A (A + 1) / (2 A + 1)`` (about 16.25 for ``A = 32``) and no value moves by
    more than ``A``. The seed is ``[NOISE_BASE_SEED, int(pixel_digest(rgb), 16)]``: the same image
    always gets the same noise, two different images different noise.

The module needs only numpy and Pillow (the type names in ``targets`` are checked against the
schema's ``TYPE_NAMES`` by the tests), so the version checks run under the oldest supported numpy.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from mmspubench.errors import MMSpuBenchError
from numpy.typing import NDArray
from PIL import Image

BLUR_SIGMA_PER_SIDE = Fraction(1, 100)
"""Gaussian sigma of ``blur`` as a fraction of the image's shorter side (1%: 2.24 px at 224 px)."""
BLUR_WEIGHT_BITS = 16
"""The blur's integer tap weights sum to ``2**BLUR_WEIGHT_BITS`` (per pass)."""
NOISE_AMPLITUDE = 32
"""``noise`` adds an integer uniform in ``-NOISE_AMPLITUDE..NOISE_AMPLITUDE`` to each channel value."""
NOISE_BASE_SEED = 20240607
"""Fixed first word of every ``noise`` seed (the second is the image's digest)."""
CACHE_SIZE = 32
"""Transformed images kept by :func:`apply` (least recently used dropped first)."""

Transform = Callable[[Image.Image], Image.Image]


@dataclass(frozen=True)
class Intervention:
    """One named image transform and the spurious types it probes."""

    name: str
    """Name used on the command line (``--interventions NAME,...``) and in result files."""
    targets: tuple[str, ...]
    """The spurious types (names from the schema's ``TYPE_NAMES``) whose channel it changes."""
    description: str
    """One line saying what it does, for help texts and reports."""
    function: Transform
    """The transform: an image in, a new RGB image of the same size out."""


def to_rgb(image: Image.Image) -> Image.Image:
    """``image`` itself when it is RGB, else ``image.convert("RGB")`` (alpha dropped, not composited)."""
    return image if image.mode == "RGB" else image.convert("RGB")


def pixel_digest(image: Image.Image) -> str:
    """sha256 hex of ``"MODE:WxH:"`` followed by the pixel bytes (for a palette image: the indices)."""
    width, height = image.size
    digest = hashlib.sha256(f"{image.mode}:{width}x{height}:".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def _pixels(image: Image.Image) -> NDArray[np.int64]:
    """The RGB pixels as an int64 array of shape (height, width, 3)."""
    rgb = to_rgb(image)
    width, height = rgb.size
    flat = np.frombuffer(rgb.tobytes(), dtype=np.uint8)
    return flat.reshape(height, width, 3).astype(np.int64)


def _image(pixels: NDArray[np.int64]) -> Image.Image:
    """An RGB image from an integer array of shape (height, width, 3), values already in 0..255."""
    height, width = pixels.shape[:2]
    return Image.frombytes("RGB", (width, height), pixels.astype(np.uint8).tobytes())


def grayscale(image: Image.Image) -> Image.Image:
    """ITU-R 601 luma in integers, replicated to the three channels (mode stays RGB)."""
    rgb = _pixels(image)
    luma = (299 * rgb[..., 0] + 587 * rgb[..., 1] + 114 * rgb[..., 2] + 500) // 1000
    return _image(np.repeat(luma[..., None], 3, axis=2))


def gaussian_weights(side: int) -> tuple[int, ...]:
    """The blur's integer taps for an image whose shorter side is ``side`` (symmetric, sum ``2**16``)."""
    sigma = BLUR_SIGMA_PER_SIDE * side
    radius = math.ceil(3 * sigma)
    if radius == 0:
        return (1 << BLUR_WEIGHT_BITS,)
    # k**2 / (2 sigma**2) is an exact fraction rounded once to float: only math.exp may vary.
    raw = [math.exp(-float(Fraction(k * k) / (2 * sigma * sigma))) for k in range(-radius, radius + 1)]
    total = math.fsum(raw)
    weights = [round(w * (1 << BLUR_WEIGHT_BITS) / total) for w in raw]
    weights[radius] += (1 << BLUR_WEIGHT_BITS) - sum(weights)
    return tuple(weights)


def _convolve(pixels: NDArray[np.int64], weights: tuple[int, ...], axis: int) -> NDArray[np.int64]:
    """Integer convolution along ``axis`` with clamped edges (no rounding, no division)."""
    radius = len(weights) // 2
    pad = [(0, 0)] * pixels.ndim
    pad[axis] = (radius, radius)
    padded = np.pad(pixels, pad, mode="edge")
    length = pixels.shape[axis]
    out = np.zeros_like(pixels)
    for offset, weight in enumerate(weights):
        if weight:
            window = [slice(None)] * pixels.ndim
            window[axis] = slice(offset, offset + length)
            out += weight * padded[tuple(window)]
    return out


def blur(image: Image.Image) -> Image.Image:
    """Separable integer Gaussian blur, sigma relative to the shorter side, clamped edges."""
    pixels = _pixels(image)
    height, width = pixels.shape[:2]
    weights = gaussian_weights(min(width, height))
    if len(weights) == 1 or pixels.size == 0:
        return _image(pixels)
    summed = _convolve(_convolve(pixels, weights, axis=1), weights, axis=0)
    shift = 2 * BLUR_WEIGHT_BITS
    return _image((summed + (1 << (shift - 1))) >> shift)


def _equalize_channel(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """The classic CDF mapping of one channel in integers; a constant (or empty) channel unchanged."""
    count = int(values.size)
    cdf = np.cumsum(np.bincount(values.reshape(-1), minlength=256))
    c_min = int(cdf[int(values.min())]) if count else 0
    span = count - c_min
    if span == 0:
        return values
    # round_half_up(255 (c - c_min) / span) == (2 * 255 (c - c_min) + span) // (2 span)
    table = (510 * (cdf - c_min) + span) // (2 * span)
    return np.clip(table, 0, 255)[values]


def equalize(image: Image.Image) -> Image.Image:
    """Per-channel histogram equalisation (the CDF mapping of the module docstring)."""
    pixels = _pixels(image)
    channels = [_equalize_channel(pixels[..., c]) for c in range(3)]
    return _image(np.stack(channels, axis=2))


def noise_values(digest: str, count: int) -> NDArray[np.int64]:
    """``count`` integers uniform in ``-NOISE_AMPLITUDE..NOISE_AMPLITUDE``, seeded by ``digest``."""
    generator = np.random.PCG64([NOISE_BASE_SEED, int(digest, 16)])
    raw = generator.random_raw((count + 1) // 2)
    halves = np.stack([raw & np.uint64(0xFFFFFFFF), raw >> np.uint64(32)], axis=1).reshape(-1)[:count]
    span = np.uint64(2 * NOISE_AMPLITUDE + 1)
    return ((halves * span) >> np.uint64(32)).astype(np.int64) - NOISE_AMPLITUDE


def noise(image: Image.Image) -> Image.Image:
    """Fixed-seed uniform integer noise of amplitude ``NOISE_AMPLITUDE``, clipped to 0..255."""
    rgb = to_rgb(image)
    pixels = _pixels(rgb)
    added = noise_values(pixel_digest(rgb), int(pixels.size)).reshape(pixels.shape)
    return _image(np.clip(pixels + added, 0, 255))


INTERVENTIONS: dict[str, Intervention] = {
    i.name: i
    for i in (
        Intervention("grayscale", ("colorization",), "colour removed (ITU-R 601 luma)", grayscale),
        Intervention("blur", ("texture_noise",), "Gaussian blur, sigma 1% of the shorter side", blur),
        Intervention("equalize", ("lighting_shadows",), "per-channel histogram equalisation", equalize),
        Intervention("noise", ("texture_noise",), f"uniform noise of +-{NOISE_AMPLITUDE} per value", noise),
    )
}
"""The built-in interventions by name."""


def _lookup(name: str) -> Intervention:
    """The intervention called ``name``, or one error line naming the closest known name."""
    if name in INTERVENTIONS:
        return INTERVENTIONS[name]
    close = difflib.get_close_matches(name, list(INTERVENTIONS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    known = ", ".join(sorted(INTERVENTIONS))
    raise MMSpuBenchError(f"--interventions: unknown intervention {name!r}{hint}; expected one of: {known}")


def parse_interventions(text: str) -> tuple[Intervention, ...]:
    """The interventions of a comma-separated list, in its order; an empty, unknown or repeated name is an error."""
    known = ", ".join(sorted(INTERVENTIONS))
    names = [part.strip() for part in text.split(",")]
    if not any(names):
        raise MMSpuBenchError(f"--interventions: no name given; expected one or more of: {known}")
    chosen: list[Intervention] = []
    for position, name in enumerate(names, start=1):
        if not name:
            raise MMSpuBenchError(
                f"--interventions {text!r}: name {position} is empty; expected one of: {known}"
            )
        if any(i.name == name for i in chosen):
            raise MMSpuBenchError(f"--interventions {text!r}: {name!r} is given twice; give each name once")
        chosen.append(_lookup(name))
    return tuple(chosen)


class _Cache:
    """A thread-safe LRU of transformed images keyed by (source digest, intervention name)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], tuple[Image.Image, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[Image.Image, str] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], value: tuple[Image.Image, str]) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


CACHE = _Cache(CACHE_SIZE)
"""The cache :func:`apply` uses; ``CACHE.clear()`` empties it."""


def apply(name: str, image: Image.Image) -> tuple[Image.Image, str]:
    """``(transformed image, its pixel_digest)``; each (source pixels, name) is transformed once.

    The key is the digest of the RGB source, so the same pixels in another object, or in another mode
    that converts to them, hit the cache (two threads missing at once both compute the same image).
    The returned image is a copy: changing it leaves the cache intact. An unknown name is
    :class:`MMSpuBenchError`; a transform breaking its contract (RGB, same size) is ``ValueError``.
    """
    intervention = _lookup(name)
    rgb = to_rgb(image)
    key = (pixel_digest(rgb), intervention.name)
    found = CACHE.get(key)
    if found is None:
        out = intervention.function(rgb)
        if out.mode != "RGB" or out.size != rgb.size:  # the contract the asking code relies on
            raise ValueError(f"intervention {name!r} returned {out.mode} {out.size}, not RGB {rgb.size}")
        found = (out, pixel_digest(out))
        CACHE.put(key, found)
    return found[0].copy(), found[1]
