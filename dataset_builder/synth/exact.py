"""Version-independent arithmetic of the synthetic twin: a bicubic resize, a perspective solve, and
quantised transcendental functions.

Pillow's ``Image.resize`` changed its output for RGBA layers between releases (13.0 moves alpha at
the transparent edge of a downscaled axis) and ``numpy.linalg.solve`` rounds differently between
numpy releases and BLAS builds; the twin's pictures must be the same bytes under every version
``pyproject.toml`` allows. The resize below is Pillow 12's algorithm (premultiplied alpha, separable
bicubic filter, 22-bit fixed-point weights, horizontal pass first) in integer numpy arithmetic, so
it gives Pillow 12's pixels exactly; the solve is exact rational arithmetic. Sines, exponentials
and powers that feed a floored pixel coordinate or a rounded intensity are computed per element
with :mod:`math` and rounded to a grid of 2**-32 (:func:`quantised`): numpy's SIMD loops and the C
libraries of different platforms differ in the last bits, and the grid absorbs those differences
(a value would have to lie within an ulp of a grid midpoint to be moved).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from PIL import Image

_PRECISION_BITS = 32 - 8 - 2
"""Fixed-point bits of Pillow's 8-bit resampling weights."""
_BICUBIC_A = -0.5
QUANTUM = 2.0**-32
"""Grid of :func:`quantised` values: far below a pixel, far above an ulp of a value near 1."""


def quantised(fn: Callable[[float], float], values: np.ndarray) -> np.ndarray:
    """``fn`` applied to each element of ``values`` (once per distinct value), rounded to ``QUANTUM``."""
    distinct, inverse = np.unique(values, return_inverse=True)
    out = np.array([fn(float(v)) for v in distinct], dtype=float)
    return (np.rint(out / QUANTUM) * QUANTUM)[inverse.reshape(values.shape)]


def _bicubic(x: float) -> float:
    x = abs(x)
    if x < 1.0:
        return ((_BICUBIC_A + 2.0) * x - (_BICUBIC_A + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * _BICUBIC_A
    return 0.0


def _weights(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output pixel: the first input index and the fixed-point weights (one row each, zero padded)."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = 2.0 * filterscale
    ksize = math.ceil(support) * 2 + 1
    starts = np.zeros(out_size, np.int64)
    table = np.zeros((out_size, ksize), np.int64)
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size) - xmin
        w = [_bicubic((x + xmin - center + 0.5) / filterscale) for x in range(xmax)]
        total = sum(w)  # Pillow sums in order too: the same rounding
        if total != 0.0:
            w = [v / total for v in w]
        table[xx, :xmax] = [
            int(-0.5 + v * (1 << _PRECISION_BITS)) if v < 0 else int(0.5 + v * (1 << _PRECISION_BITS))
            for v in w
        ]
        starts[xx] = xmin
    return starts, table


def _resample_axis(arr: np.ndarray, out_size: int, axis: int) -> np.ndarray:
    """Resample ``arr`` (uint8, H x W x C) along ``axis`` (1: horizontal, 0: vertical) to ``out_size``."""
    in_size = arr.shape[axis]
    starts, table = _weights(in_size, out_size)
    moved = np.moveaxis(arr.astype(np.int64), axis, 0)
    padded = np.concatenate([moved, np.zeros((table.shape[1], *moved.shape[1:]), np.int64)])
    acc = np.full((out_size, *moved.shape[1:]), 1 << (_PRECISION_BITS - 1), np.int64)
    for k in range(table.shape[1]):
        weight = table[:, k].reshape(-1, *([1] * (moved.ndim - 1)))
        acc += padded[starts + k] * weight
    out = np.clip(acc >> _PRECISION_BITS, 0, 255).astype(np.uint8)
    return np.moveaxis(out, 0, axis)


def resize_bicubic(layer: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``layer.resize(size, BICUBIC)`` of an RGBA layer as Pillow 12 computes it, for every Pillow."""
    arr = np.asarray(layer.convert("RGBA")).astype(np.int64)
    alpha = arr[..., 3:4]
    tmp = arr[..., :3] * alpha + 128
    premultiplied = np.concatenate([((tmp >> 8) + tmp) >> 8, alpha], axis=-1).astype(np.uint8)
    out = premultiplied
    if size[0] != layer.width:
        out = _resample_axis(out, size[0], axis=1)
    if size[1] != layer.height:
        out = _resample_axis(out, size[1], axis=0)
    wide = out.astype(np.int64)
    a = wide[..., 3:4]
    safe = np.where(a == 0, 1, a)
    rgb = np.where((a == 0) | (a == 255), wide[..., :3], np.clip(255 * wide[..., :3] // safe, 0, 255))
    return Image.fromarray(np.concatenate([rgb, a], axis=-1).astype(np.uint8), "RGBA")


def solve_exact(rows: list[list[float]], rhs: list[float]) -> list[float]:
    """The solution of ``rows @ x = rhs`` by Gauss-Jordan elimination over exact fractions."""
    n = len(rows)
    m = [[Fraction(v) for v in row] + [Fraction(b)] for row, b in zip(rows, rhs, strict=True)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            raise ValueError("singular system")
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col], strict=True)]
    return [float(m[i][n] / m[i][i]) for i in range(n)]
