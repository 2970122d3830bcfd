"""Rendering of one synthetic scene: the object, then each planted spurious value made visible.

A scene is fully described by a :class:`SceneSpec`; rendering it is a pure function of the spec
and the image size, so the generator and the tests can re-render any item.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mmspubench.dataset_builder.synth.exact import quantised, resize_bicubic, solve_exact
from mmspubench.dataset_builder.synth.shapes import (
    SKY_CO_OBJECTS,
    draw_background,
    draw_co_object,
    draw_object,
)
from PIL import Image, ImageDraw, ImageFilter


@dataclass(frozen=True, slots=True)
class SceneSpec:
    """Everything needed to draw one scene."""

    class_name: str
    """Object class drawn (``vocab.CLASSES``)."""
    cell: int
    """3x3 grid cell of the object centre, row-major (``vocab.POSITIONS``)."""
    offset: tuple[float, float]
    """Jitter of the object centre, as a fraction of the image size."""
    scale: float
    """Object box size as a fraction of the image size, unless a relative-size value overrides it."""
    planted: tuple[tuple[str, str], ...]
    """Planted spurious values as (type name, value key), one or two."""
    noise_seed: int
    """Seed of the random decorations and noise."""

    def planted_key(self, type_name: str) -> str | None:
        """The key planted for ``type_name``, or None when that type is not planted."""
        return next((key for name, key in self.planted if name == type_name), None)


RELATIVE_SCALE: dict[str, float] = {"tiny": 0.13, "very_small": 0.21, "very_large": 0.8, "giant": 1.3}
"""Object box size (fraction of the image) of each relative-size value."""

ROTATION_DEGREES: dict[str, float] = {
    "upside_down": 180,
    "left_90": 90,
    "right_90": -90,
    "left_45": 45,
    "right_45": -45,
    "left_135": 135,
    "right_135": -135,
    "right_20": -20,
}
"""Counter-clockwise rotation of each orientation value."""

# Destination corners (upper left, upper right, lower right, lower left) of the object layer,
# as fractions of its width and height: how the flat drawing looks from each viewpoint.
PERSPECTIVE_QUADS: dict[str, tuple[tuple[float, float], ...]] = {
    "from_above": ((0.0, 0.3), (1.0, 0.3), (0.7, 0.74), (0.3, 0.74)),
    "from_below": ((0.36, 0.04), (0.64, 0.04), (1.0, 0.96), (0.0, 0.96)),
    "from_left": ((0.05, 0.0), (0.72, 0.3), (0.72, 0.7), (0.05, 1.0)),
    "from_right": ((0.28, 0.3), (0.95, 0.0), (0.95, 1.0), (0.28, 0.7)),
    "slant_left": ((0.0, 0.0), (0.5, 0.0), (1.0, 1.0), (0.5, 1.0)),
    "slant_right": ((0.5, 0.0), (1.0, 0.0), (0.5, 1.0), (0.0, 1.0)),
}

TINTS: dict[str, tuple[int, int, int]] = {
    "red": (255, 50, 50),
    "orange": (255, 150, 30),
    "yellow": (255, 240, 50),
    "green": (60, 230, 60),
    "cyan": (50, 230, 240),
    "blue": (60, 100, 255),
    "purple": (160, 60, 240),
    "magenta": (250, 50, 220),
    "sepia": (240, 200, 140),
    "gray": (255, 255, 255),
}
"""Tint colour of each colorization value (gray: plain luminance)."""

OBJECT_PATTERNS = frozenset({"stripes_h", "stripes_v", "dots", "checker", "hatch"})
"""Texture values painted on the object; the other texture values affect the whole picture."""


def _pattern_mask(key: str, width: int, height: int) -> np.ndarray:
    period = max(4, round(max(width, height) / 8))
    y, x = np.mgrid[0:height, 0:width]
    if key == "stripes_h":
        return (y % period) < period * 0.4
    if key == "stripes_v":
        return (x % period) < period * 0.4
    if key == "checker":
        return ((x // period + y // period) % 2) == 0
    if key == "hatch":
        return ((x + y) % period) < period * 0.35
    dx, dy = x % period - period / 2, y % period - period / 2
    radius = period * 0.28
    return (dx * dx + dy * dy) < radius * radius


def _apply_pattern(layer: Image.Image, key: str) -> Image.Image:
    arr = np.asarray(layer).copy()
    mask = _pattern_mask(key, layer.width, layer.height) & (arr[..., 3] > 0)
    arr[mask, :3] = (25, 25, 30)
    return Image.fromarray(arr, "RGBA")


def _remap(layer: Image.Image, src_x: np.ndarray, src_y: np.ndarray) -> Image.Image:
    arr = np.asarray(layer)
    h, w = arr.shape[:2]
    inside = (src_x >= 0) & (src_x < w) & (src_y >= 0) & (src_y < h)
    out = np.zeros_like(arr)
    out[inside] = arr[src_y[inside].astype(int), src_x[inside].astype(int)]
    return Image.fromarray(out, "RGBA")


def _apply_shape(layer: Image.Image, key: str) -> Image.Image:
    w, h = layer.size
    if key == "tall":
        return resize_bicubic(layer, (max(2, round(w * 0.5)), round(h * 1.35)))
    if key == "wide":
        return resize_bicubic(layer, (round(w * 1.45), max(2, round(h * 0.5))))
    # Warps move pixels sideways: give them a transparent margin to move into.
    margin = round(0.2 * w)
    padded = Image.new("RGBA", (w + 2 * margin, h), (0, 0, 0, 0))
    padded.paste(layer, (margin, 0))
    layer, w = padded, w + 2 * margin
    y, x = np.mgrid[0:h, 0:w].astype(float)
    # Sines and powers come from quantised per-element math calls (exact.quantised), not
    # numpy's SIMD loops, whose last bits differ by CPU and release and would move a floored pixel.
    if key == "wavy":
        return _remap(
            layer,
            x + 0.07 * w * quantised(math.sin, 2 * np.pi * y / (0.3 * h)),
            y + 0.05 * h * quantised(math.sin, 2 * np.pi * x / (0.35 * w)),
        )
    cx, cy, radius = w / 2, h / 2, max(w, h) / 2
    if key == "bent":
        # Rows shift sideways along a half sine: the upright axis of the object bows into a curve.
        return _remap(layer, x - 0.2 * w * quantised(math.sin, np.pi * y / h), y)
    # Radial remap: output radius r samples source radius r**1.9, magnifying the centre.
    power = 1.9
    dx, dy = (x - cx) / radius, (y - cy) / radius
    r = np.sqrt(dx * dx + dy * dy)  # sqrt is correctly rounded everywhere; hypot is not
    grown = quantised(lambda v: v ** (power - 1), np.clip(r, 1e-6, 1))
    factor = np.where((r > 0) & (r < 1), grown, 1.0)
    return _remap(layer, cx + dx * factor * radius, cy + dy * factor * radius)


def _perspective_coefficients(dst: list[tuple[float, float]], src: list[tuple[float, float]]) -> list[float]:
    # PIL's PERSPECTIVE maps each output point (x, y) to the input point
    # ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1)); solve for a..h.
    rows, rhs = [], []
    for (x, y), (u, v) in zip(dst, src, strict=True):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs.extend([u, v])
    # Exact rational elimination: numpy's solve rounds differently between releases and BLAS builds.
    return solve_exact(rows, rhs)


def _apply_perspective(layer: Image.Image, key: str) -> Image.Image:
    w, h = layer.size
    dst = [(fx * w, fy * h) for fx, fy in PERSPECTIVE_QUADS[key]]
    src = [(0.0, 0.0), (float(w), 0.0), (float(w), float(h)), (0.0, float(h))]
    return layer.transform(
        (w, h), Image.Transform.PERSPECTIVE, _perspective_coefficients(dst, src), Image.Resampling.BICUBIC
    )


def _ramp(n: int) -> np.ndarray:
    """``np.linspace(0, 1, n)`` written out: the same values, whatever numpy's implementation."""
    if n < 2:
        return np.zeros(n)  # linspace's one value is the start
    values = np.arange(n) * (1.0 / (n - 1))
    values[-1] = 1.0
    return values


def _apply_side_light(layer: Image.Image, key: str) -> Image.Image:
    arr = np.asarray(layer).astype(float)
    h, w = arr.shape[:2]
    ramp_x, ramp_y = _ramp(w)[None, :], _ramp(h)[:, None]
    ramp = {"from_left": ramp_x, "from_right": 1 - ramp_x, "from_above": ramp_y}[key]
    arr[..., :3] *= (1.15 - 1.0 * np.broadcast_to(ramp, (h, w)))[..., None]
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGBA")


def _cast_shadow(layer: Image.Image, to_right: bool) -> Image.Image:
    # A shadow lying on the ground: the silhouette flattened to 40% height and sheared so that
    # higher parts of the object fall further away, anchored at the object's base.
    alpha = layer.getchannel("A")
    if not to_right:
        alpha = alpha.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    w, h = alpha.size
    shear, squash = 1.3, 2.5
    shadow = alpha.transform(
        (w + round(shear * h), h),
        Image.Transform.AFFINE,
        (1, squash * shear, -squash * shear * h, 0, squash, (1 - squash) * h),
        Image.Resampling.BILINEAR,
    )
    shadow = shadow.point(lambda v: round(v * 0.6)).filter(ImageFilter.GaussianBlur(max(1, w / 60)))
    if not to_right:
        shadow = shadow.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return shadow


def object_layer(spec: SceneSpec, size: int) -> Image.Image:
    """The object with every object-level planted value applied, on a transparent layer."""
    scale = RELATIVE_SCALE.get(spec.planted_key("relative_size") or "", spec.scale)
    layer = draw_object(spec.class_name, max(8, round(scale * size)))
    texture = spec.planted_key("texture_noise")
    if texture in OBJECT_PATTERNS:
        layer = _apply_pattern(layer, texture)
    if (shape := spec.planted_key("shape")) is not None:
        layer = _apply_shape(layer, shape)
    if (view := spec.planted_key("perspective_angle")) is not None:
        layer = _apply_perspective(layer, view)
    if (turn := spec.planted_key("orientation")) is not None:
        layer = layer.rotate(ROTATION_DEGREES[turn], Image.Resampling.BICUBIC, expand=True)
    if spec.planted_key("lighting_shadows") in ("from_left", "from_right", "from_above"):
        layer = _apply_side_light(layer, spec.planted_key("lighting_shadows") or "")
    # Trim to the drawn pixels, so placement and cast shadows follow the visible object.
    bbox = layer.getchannel("A").getbbox()
    return layer.crop(bbox) if bbox is not None else layer


def _centre(spec: SceneSpec, layer: Image.Image, size: int) -> tuple[int, int]:
    row, col = divmod(spec.cell, 3)
    centre = []
    for index, extent, jitter in ((col, layer.width, spec.offset[0]), (row, layer.height, spec.offset[1])):
        wanted = ((index + 0.5) / 3 + jitter) * size
        # Keep the object inside the frame where it fits; a larger one is centred (and cropped).
        low, high = extent / 2, size - extent / 2
        centre.append(round(min(max(wanted, low), high)) if low <= high else size // 2)
    return centre[0], centre[1]


def _global_light(arr: np.ndarray, key: str, centre: tuple[int, int]) -> np.ndarray:
    if key == "dim":
        return arr * 0.33
    if key == "overexposed":
        return arr * 0.45 + 255 * 0.6
    h, w = arr.shape[:2]
    if key in ("from_left", "from_right", "from_above"):
        # The whole scene darkens away from the light too, more gently than the object itself.
        ramp_x, ramp_y = _ramp(w)[None, :], _ramp(h)[:, None]
        ramp = {"from_left": ramp_x, "from_right": 1 - ramp_x, "from_above": ramp_y}[key]
        return arr * (1.0 - 0.5 * np.broadcast_to(ramp, (h, w)))[..., None]
    y, x = np.mgrid[0:h, 0:w]
    dx, dy = x - centre[0], y - centre[1]
    d = np.sqrt((dx * dx + dy * dy).astype(float)) / (0.3 * w)
    return arr * (0.12 + 1.0 * quantised(math.exp, -(d * d)))[..., None]


def _global_texture(image: Image.Image, key: str, rng: np.random.Generator) -> Image.Image:
    size = image.width
    if key == "blur":
        return image.filter(ImageFilter.GaussianBlur(size / 45))
    if key == "pixelate":
        # About 32 blocks across at the default size: coarse, yet the object stays recognisable.
        small = image.resize((max(8, size // 7),) * 2, Image.Resampling.BOX)
        return small.resize(image.size, Image.Resampling.NEAREST)
    if key == "scribble":
        draw = ImageDraw.Draw(image)
        for _ in range(10):
            points = [tuple(float(v) for v in rng.uniform(0, size, 2)) for _ in range(4)]
            draw.line(points, fill=(20, 20, 20), width=max(1, size // 70))
        return image
    arr = np.asarray(image).astype(float)
    if key == "grain":
        arr = arr + rng.normal(0, 50, arr.shape)
    else:  # speckle: salt-and-pepper
        hit = rng.random(arr.shape[:2])
        arr[hit < 0.07] = 0
        arr[hit > 0.93] = 255
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")


def _colorize(arr: np.ndarray, key: str) -> np.ndarray:
    # Written out rather than a matmul, which BLAS may sum in another order (or fused) per CPU.
    lum = (arr[..., 0] * 0.299 + arr[..., 1] * 0.587 + arr[..., 2] * 0.114)[..., None]
    tinted = np.clip(lum / 255 * np.array(TINTS[key], float) * 1.15, 0, 255)
    return tinted if key == "gray" else tinted * 0.85 + arr * 0.15


def render_scene(spec: SceneSpec, size: int) -> Image.Image:
    """Draw the scene of ``spec`` as an RGB image of ``size`` x ``size`` pixels."""
    rng = np.random.default_rng(spec.noise_seed)
    canvas = draw_background(spec.planted_key("background"), size, rng)
    layer = object_layer(spec, size)
    cx, cy = _centre(spec, layer, size)
    corner = (cx - layer.width // 2, cy - layer.height // 2)
    light = spec.planted_key("lighting_shadows")
    if light in ("shadow_right", "shadow_left"):
        shadow = _cast_shadow(layer, light == "shadow_right")
        x = corner[0] if light == "shadow_right" else corner[0] + layer.width - shadow.width
        canvas.paste((15, 15, 20), (x, corner[1]), shadow)
    canvas.paste(layer, corner, layer)
    if (co := spec.planted_key("co_occurring_objects")) is not None:
        box = round(size * 0.3)
        col = 2 if spec.cell % 3 == 0 else 0 if spec.cell % 3 == 2 else (2 if rng.random() < 0.5 else 0)
        x0 = round(col * size / 3 + (size / 3 - box) / 2)
        y0 = round(size * 0.03) if co in SKY_CO_OBJECTS else size - box - round(size * 0.03)
        draw_co_object(canvas, co, (x0, y0, box))
    texture = spec.planted_key("texture_noise")
    if texture is not None and texture not in OBJECT_PATTERNS:
        canvas = _global_texture(canvas, texture, rng)
    arr = np.asarray(canvas).astype(float)
    if light is not None and light not in ("shadow_right", "shadow_left"):
        arr = _global_light(arr, light or "", (cx, cy))
    if (tint := spec.planted_key("colorization")) is not None:
        arr = _colorize(arr, tint)
    return Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), "RGB")
