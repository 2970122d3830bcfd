"""Drawing primitives of the synthetic twin: the object classes, co-occurring objects, backgrounds.

Every drawer works in unit coordinates on a square box, so the same scene renders at any size.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageDraw

RGB = tuple[int, int, int]
OUTLINE: RGB = (35, 35, 40)
NEUTRAL_BACKGROUND: RGB = (208, 210, 204)
"""Plain background of scenes that do not plant a background value."""

BACKGROUND_RGB: dict[str, RGB] = {
    "water": (40, 100, 190),
    "sand": (222, 196, 140),
    "snow": (242, 245, 252),
    "night": (18, 22, 58),
    "grass": (88, 168, 68),
    "brick": (160, 66, 48),
    "wood": (150, 104, 58),
    "road": (88, 88, 94),
    "sunset": (246, 150, 160),
    "tiles": (128, 78, 170),
}
"""Dominant colour of each background value (decorations cover a small share of the pixels)."""


class Pen:
    """Draws shapes given in unit coordinates onto a square box of ``size`` pixels."""

    def __init__(self, draw: ImageDraw.ImageDraw, size: int, origin: tuple[int, int] = (0, 0)) -> None:
        self.draw = draw
        self.size = size
        self.origin = origin
        self.width = max(1, round(size / 70))

    def xy(self, x: float, y: float) -> tuple[float, float]:
        """Pixel coordinates of the unit point (x, y)."""
        return (self.origin[0] + x * self.size, self.origin[1] + y * self.size)

    def poly(self, points: list[tuple[float, float]], fill: RGB, outline: bool = True) -> None:
        """Filled polygon."""
        self.draw.polygon(
            [self.xy(*p) for p in points],
            fill=fill,
            outline=OUTLINE if outline else None,
            width=self.width if outline else 0,
        )

    def ellipse(self, cx: float, cy: float, rx: float, ry: float, fill: RGB, outline: bool = True) -> None:
        """Filled ellipse centred at (cx, cy) with radii rx, ry."""
        box = [self.xy(cx - rx, cy - ry), self.xy(cx + rx, cy + ry)]
        self.draw.ellipse(
            box, fill=fill, outline=OUTLINE if outline else None, width=self.width if outline else 0
        )

    def rect(self, x0: float, y0: float, x1: float, y1: float, fill: RGB, outline: bool = True) -> None:
        """Filled rectangle."""
        self.draw.rectangle(
            [self.xy(x0, y0), self.xy(x1, y1)],
            fill=fill,
            outline=OUTLINE if outline else None,
            width=self.width if outline else 0,
        )

    def line(self, points: list[tuple[float, float]], fill: RGB, width: float) -> None:
        """Polyline of width ``width`` (unit coordinates)."""
        self.draw.line([self.xy(*p) for p in points], fill=fill, width=max(1, round(width * self.size)))


# --- object classes -------------------------------------------------------------------------


def _boat(p: Pen) -> None:
    p.line([(0.5, 0.1), (0.5, 0.66)], (60, 50, 45), 0.035)
    p.poly([(0.53, 0.14), (0.53, 0.6), (0.86, 0.6)], (250, 250, 250))
    p.poly([(0.06, 0.62), (0.94, 0.62), (0.76, 0.86), (0.24, 0.86)], (139, 90, 43))


def _cactus(p: Pen) -> None:
    green = (46, 139, 87)
    p.rect(0.18, 0.3, 0.3, 0.6, green)
    p.rect(0.18, 0.52, 0.42, 0.62, green)
    p.rect(0.7, 0.22, 0.82, 0.5, green)
    p.rect(0.58, 0.42, 0.82, 0.52, green)
    p.rect(0.38, 0.14, 0.62, 0.94, green)
    p.ellipse(0.5, 0.12, 0.08, 0.07, (240, 110, 180))


def _snowman(p: Pen) -> None:
    white = (246, 246, 250)
    p.ellipse(0.5, 0.74, 0.22, 0.2, white)
    p.ellipse(0.5, 0.45, 0.16, 0.14, white)
    p.ellipse(0.5, 0.22, 0.12, 0.11, white)
    p.poly([(0.5, 0.21), (0.5, 0.26), (0.7, 0.25)], (245, 130, 20), outline=False)
    for x in (0.45, 0.55):
        p.ellipse(x, 0.18, 0.02, 0.02, (10, 10, 10), outline=False)


def _rocket(p: Pen) -> None:
    red = (210, 40, 40)
    p.poly([(0.5, 0.8), (0.62, 0.8), (0.56, 0.98), (0.44, 0.98), (0.38, 0.8)], (255, 150, 20), outline=False)
    p.poly([(0.38, 0.58), (0.22, 0.82), (0.38, 0.78)], red)
    p.poly([(0.62, 0.58), (0.78, 0.82), (0.62, 0.78)], red)
    p.rect(0.38, 0.26, 0.62, 0.8, (226, 226, 234))
    p.poly([(0.38, 0.26), (0.62, 0.26), (0.5, 0.04)], red)
    p.ellipse(0.5, 0.45, 0.06, 0.06, (90, 160, 230))


def _sunflower(p: Pen) -> None:
    p.line([(0.5, 0.4), (0.5, 0.97)], (40, 140, 50), 0.05)
    p.ellipse(0.62, 0.74, 0.1, 0.04, (40, 140, 50), outline=False)
    for k in range(12):
        angle = 2 * math.pi * k / 12
        p.ellipse(0.5 + 0.2 * math.cos(angle), 0.32 + 0.2 * math.sin(angle), 0.08, 0.08, (250, 210, 20))
    p.ellipse(0.5, 0.32, 0.14, 0.14, (110, 66, 30))


def _mailbox(p: Pen) -> None:
    blue = (30, 80, 200)
    p.rect(0.44, 0.55, 0.56, 0.97, (120, 80, 40))
    p.rect(0.2, 0.3, 0.8, 0.6, blue)
    p.draw.pieslice([p.xy(0.2, 0.12), p.xy(0.8, 0.48)], 180, 360, fill=blue, outline=OUTLINE, width=p.width)
    p.rect(0.8, 0.22, 0.84, 0.5, (60, 60, 60))
    p.rect(0.84, 0.22, 0.95, 0.3, (220, 30, 30))


def _lamp(p: Pen) -> None:
    p.ellipse(0.5, 0.92, 0.22, 0.05, (70, 70, 75))
    p.line([(0.5, 0.36), (0.5, 0.9)], (150, 150, 155), 0.04)
    p.poly([(0.36, 0.08), (0.64, 0.08), (0.8, 0.4), (0.2, 0.4)], (250, 215, 60))


def _car(p: Pen) -> None:
    red = (215, 35, 35)
    p.poly([(0.28, 0.5), (0.36, 0.3), (0.68, 0.3), (0.78, 0.5)], red)
    p.rect(0.06, 0.48, 0.94, 0.72, red)
    p.poly([(0.38, 0.47), (0.42, 0.34), (0.51, 0.34), (0.51, 0.47)], (170, 220, 250))
    p.poly([(0.55, 0.47), (0.55, 0.34), (0.65, 0.34), (0.71, 0.47)], (170, 220, 250))
    for x in (0.27, 0.73):
        p.ellipse(x, 0.73, 0.11, 0.11, (20, 20, 20))


def _kite(p: Pen) -> None:
    top, left, right, bottom, mid = (0.5, 0.04), (0.22, 0.36), (0.78, 0.36), (0.5, 0.72), (0.5, 0.36)
    p.poly([top, right, mid], (220, 40, 40))
    p.poly([top, left, mid], (40, 80, 210))
    p.poly([left, bottom, mid], (220, 40, 40))
    p.poly([right, bottom, mid], (40, 80, 210))
    p.line([top, bottom], (120, 90, 50), 0.015)
    p.line([left, right], (120, 90, 50), 0.015)
    p.line([bottom, (0.44, 0.8), (0.56, 0.88), (0.46, 0.97)], (60, 60, 60), 0.012)
    for x, y in ((0.44, 0.8), (0.56, 0.88)):
        p.poly(
            [(x - 0.05, y - 0.03), (x + 0.05, y + 0.03), (x + 0.05, y - 0.03), (x - 0.05, y + 0.03)],
            (250, 220, 30),
            outline=False,
        )


def _teapot(p: Pen) -> None:
    teal = (20, 150, 150)
    p.poly([(0.7, 0.55), (0.9, 0.3), (0.95, 0.32), (0.76, 0.68)], teal)
    p.draw.arc([p.xy(0.06, 0.38), p.xy(0.36, 0.7)], 90, 270, fill=OUTLINE, width=max(1, round(0.05 * p.size)))
    p.ellipse(0.52, 0.6, 0.3, 0.26, teal)
    p.ellipse(0.52, 0.34, 0.14, 0.04, teal)
    p.ellipse(0.52, 0.27, 0.05, 0.05, (240, 240, 240))


CLASS_DRAWERS: dict[str, Callable[[Pen], None]] = {
    "boat": _boat,
    "cactus": _cactus,
    "snowman": _snowman,
    "rocket": _rocket,
    "sunflower": _sunflower,
    "mailbox": _mailbox,
    "lamp": _lamp,
    "car": _car,
    "kite": _kite,
    "teapot": _teapot,
}
"""Drawer of each object class (names match ``vocab.CLASSES``)."""


def draw_object(class_name: str, size: int) -> Image.Image:
    """The object alone on a transparent square layer, drawn at 2x and downsampled for smooth edges."""
    big = Image.new("RGBA", (2 * size, 2 * size), (0, 0, 0, 0))
    CLASS_DRAWERS[class_name](Pen(ImageDraw.Draw(big), 2 * size))
    return big.resize((size, size), Image.Resampling.BOX)


# --- co-occurring objects ---------------------------------------------------------------------


def _co_tree(p: Pen) -> None:
    p.rect(0.44, 0.55, 0.56, 0.95, (110, 70, 35))
    p.ellipse(0.5, 0.38, 0.3, 0.3, (30, 120, 40))


def _co_house(p: Pen) -> None:
    p.rect(0.18, 0.45, 0.82, 0.95, (235, 200, 150))
    p.poly([(0.1, 0.47), (0.5, 0.1), (0.9, 0.47)], (150, 50, 40))
    p.rect(0.42, 0.68, 0.58, 0.95, (100, 60, 30))


def _co_cloud(p: Pen) -> None:
    # A grey rim drawn first (slightly larger puffs) keeps the white cloud visible on pale scenes.
    for grow, colour in ((0.03, (140, 150, 170)), (0.0, (252, 252, 252))):
        for cx, cy, r in ((0.32, 0.55, 0.18), (0.5, 0.45, 0.22), (0.7, 0.56, 0.17)):
            p.ellipse(cx, cy, r + grow, r * 0.85 + grow, colour, outline=False)
        p.rect(0.2 - grow, 0.55, 0.82 + grow, 0.7 + grow, colour, outline=False)


def _co_sun(p: Pen) -> None:
    for k in range(8):
        a = 2 * math.pi * k / 8
        p.line(
            [
                (0.5 + 0.28 * math.cos(a), 0.5 + 0.28 * math.sin(a)),
                (0.5 + 0.45 * math.cos(a), 0.5 + 0.45 * math.sin(a)),
            ],
            (250, 200, 0),
            0.05,
        )
    p.ellipse(0.5, 0.5, 0.24, 0.24, (255, 220, 0), outline=False)


def _co_tulip(p: Pen) -> None:
    p.line([(0.5, 0.45), (0.5, 0.95)], (40, 140, 50), 0.05)
    p.poly(
        [(0.3, 0.2), (0.4, 0.35), (0.5, 0.18), (0.6, 0.35), (0.7, 0.2), (0.68, 0.45), (0.32, 0.45)],
        (220, 20, 60),
    )


def _co_rock(p: Pen) -> None:
    p.poly([(0.1, 0.9), (0.2, 0.55), (0.45, 0.4), (0.75, 0.48), (0.92, 0.9)], (128, 128, 132))


def _co_bird(p: Pen) -> None:
    dark = (45, 45, 55)
    p.poly([(0.05, 0.25), (0.48, 0.55), (0.3, 0.66)], dark, outline=False)
    p.poly([(0.95, 0.25), (0.52, 0.55), (0.7, 0.66)], dark, outline=False)
    p.ellipse(0.5, 0.6, 0.16, 0.09, dark, outline=False)
    p.ellipse(0.66, 0.52, 0.07, 0.07, dark, outline=False)
    p.poly([(0.72, 0.5), (0.84, 0.54), (0.72, 0.56)], (245, 150, 20), outline=False)


def _co_fence(p: Pen) -> None:
    for x in (0.15, 0.38, 0.61, 0.84):
        p.poly(
            [(x - 0.08, 0.95), (x - 0.08, 0.35), (x, 0.25), (x + 0.08, 0.35), (x + 0.08, 0.95)],
            (190, 140, 80),
        )
    for y in (0.5, 0.75):
        p.rect(0.05, y, 0.95, y + 0.07, (170, 120, 65))


def _co_cone(p: Pen) -> None:
    p.rect(0.15, 0.85, 0.85, 0.95, (240, 110, 20))
    p.poly([(0.5, 0.1), (0.75, 0.85), (0.25, 0.85)], (250, 120, 20))
    p.poly([(0.39, 0.45), (0.61, 0.45), (0.66, 0.6), (0.34, 0.6)], (250, 250, 250), outline=False)


def _co_balloon(p: Pen) -> None:
    p.line([(0.5, 0.62), (0.45, 0.8), (0.55, 0.97)], (60, 60, 60), 0.02)
    p.ellipse(0.5, 0.35, 0.22, 0.28, (230, 50, 160))


CO_OBJECT_DRAWERS: dict[str, Callable[[Pen], None]] = {
    "tree": _co_tree,
    "house": _co_house,
    "cloud": _co_cloud,
    "sun": _co_sun,
    "tulip": _co_tulip,
    "rock": _co_rock,
    "bird": _co_bird,
    "fence": _co_fence,
    "cone": _co_cone,
    "balloon": _co_balloon,
}
"""Drawer of each co-occurring object (keys match the ``co_occurring_objects`` values)."""

SKY_CO_OBJECTS = frozenset({"cloud", "sun", "bird", "balloon"})
"""Co-occurring objects placed in the upper row; the others stand in the lower row."""


def draw_co_object(canvas: Image.Image, key: str, box: tuple[int, int, int]) -> None:
    """Draw co-occurring object ``key`` into the square ``box`` = (x0, y0, size) of ``canvas``."""
    x0, y0, size = box
    CO_OBJECT_DRAWERS[key](Pen(ImageDraw.Draw(canvas), size, (x0, y0)))


# --- backgrounds ------------------------------------------------------------------------------


def draw_background(key: str | None, size: int, rng: np.random.Generator) -> Image.Image:
    """The scene background: neutral when ``key`` is None, else the named background value."""
    base = NEUTRAL_BACKGROUND if key is None else BACKGROUND_RGB[key]
    canvas = Image.new("RGB", (size, size), base)
    if key is None:
        return canvas
    draw = ImageDraw.Draw(canvas)
    w = max(1, size // 80)
    if key in ("brick", "tiles", "wood"):
        step = size // (6 if key == "brick" else 5)
        line = {"brick": (205, 200, 190), "tiles": (175, 140, 210), "wood": (105, 70, 35)}[key]
        for k, y in enumerate(range(0, size, step)):
            draw.line([(0, y), (size, y)], fill=line, width=w)
            if key != "wood":
                offset = step // 2 if key == "brick" and k % 2 else 0
                for x in range(offset, size, step * (2 if key == "brick" else 1)):
                    draw.line([(x, y), (x, y + step)], fill=line, width=w)
        return canvas
    if key == "road":
        for x in range(0, size, size // 5):
            draw.rectangle([x, size * 0.48, x + size // 10, size * 0.52], fill=(245, 215, 40))
        return canvas
    # Scattered marks (waves, dunes, snowflakes, stars, grass blades, sunset streaks).
    marks = {
        "water": (120, 170, 235),
        "sand": (190, 160, 100),
        "snow": (170, 200, 235),
        "night": (250, 245, 180),
        "grass": (40, 110, 35),
        "sunset": (250, 190, 120),
    }[key]
    for _ in range(40):
        mx, my = (float(v) for v in rng.uniform(0, size, 2))
        length = size * 0.06
        if key in ("night", "snow"):
            r = max(1.0, size / 150)
            draw.ellipse([mx - r, my - r, mx + r, my + r], fill=marks)
        elif key == "grass":
            draw.line([(mx, my), (mx + length * 0.3, my - length)], fill=marks, width=w)
        else:
            draw.arc([mx, my, mx + length * 2, my + length], 200, 340, fill=marks, width=w)
    return canvas
