"""The version-independent arithmetic of the synthetic twin (``synth.exact``)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import PIL
from mmspubench.dataset_builder.synth.draw import PERSPECTIVE_QUADS, _perspective_coefficients, _ramp
from mmspubench.dataset_builder.synth.exact import QUANTUM, quantised, resize_bicubic, solve_exact
from mmspubench.dataset_builder.synth.shapes import draw_object
from PIL import Image

# resize_bicubic of the 118 px teapot layer, as Pillow 10 to 12.3 resize it (Pillow 13 differs).
RESIZED = {
    (171, 59): "3a4a5bd8f2c5a37d0e2f2b497ad3ba6e4b1a05a7729997f019a0050ff49cb518",
    (59, 159): "64a3da59b0e79355f97991cc4781c40ff2d6eaae91771e4525b0da723e3a77f2",
}


def test_the_resize_gives_the_pinned_pixels_and_pillow_12s() -> None:
    layer = draw_object("teapot", 118)
    pillow_12 = int(PIL.__version__.split(".")[0]) < 13
    for size, digest in RESIZED.items():
        ours = resize_bicubic(layer, size)
        assert hashlib.sha256(ours.tobytes()).hexdigest() == digest, size
        if pillow_12:  # the algorithm is Pillow 12's: on those versions it is Image.resize exactly
            assert ours.tobytes() == layer.resize(size, Image.Resampling.BICUBIC).tobytes(), size


def test_the_exact_solve_maps_each_quad_corner_onto_the_layer_corner() -> None:
    w, h = 100, 80
    for quad in PERSPECTIVE_QUADS.values():
        dst = [(fx * w, fy * h) for fx, fy in quad]
        a, b, c, d, e, f, g, k = _perspective_coefficients(dst, [(0, 0), (w, 0), (w, h), (0, h)])
        for (x, y), (u, v) in zip(dst, [(0, 0), (w, 0), (w, h), (0, h)], strict=True):
            z = g * x + k * y + 1
            assert math.isclose((a * x + b * y + c) / z, u, abs_tol=1e-9)
            assert math.isclose((d * x + e * y + f) / z, v, abs_tol=1e-9)
    # Exact: a system with a rational solution gives the correctly rounded floats.
    assert solve_exact([[3, 1], [1, 2]], [9, 8]) == [2.0, 3.0]
    assert solve_exact([[0, 3], [3, 0]], [1, 2]) == [2 / 3, 1 / 3]


def test_quantised_values_absorb_an_ulp_of_the_function() -> None:
    values = np.random.default_rng(0).uniform(-7, 7, (40, 50))
    exact = quantised(math.sin, values)
    off = quantised(lambda v: math.nextafter(math.sin(v), 2.0), values)
    assert np.array_equal(exact, off)
    assert np.array_equal(np.rint(exact / QUANTUM) * QUANTUM, exact)  # on the grid
    assert np.abs(exact - np.sin(values)).max() <= QUANTUM


def test_the_ramp_is_linspace() -> None:
    for n in range(0, 300):
        assert np.array_equal(_ramp(n), np.linspace(0, 1, n)), n
