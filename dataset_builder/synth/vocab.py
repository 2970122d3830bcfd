"""Vocabulary of the synthetic twin: object classes, spurious values, positions, question templates.

Each class has intrinsic parts, shape and colours (its core attributes, each text shared with at
least one other class) and, for each of the nine spurious types, one "home" value: the value that
co-occurs with the class in the training mode.
Every spurious value is the home of at least one class, so planting a value that is not the true
class's home always points at some other class -- the lure a cue-following model falls for.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmspubench.dataset_builder.schema import TYPE_NAMES


@dataclass(frozen=True, slots=True)
class SpuriousValue:
    """One plantable value of a spurious type, e.g. the sandy desert background."""

    type: str
    """Canonical spurious type name (``schema.TYPE_NAMES``)."""
    key: str
    """Short identifier used by the renderer, unique within the type."""
    text: str
    """The spurious attribute text written into the record."""
    phrase: str
    """How a question refers to the object through this value (e.g. "on the sandy desert background")."""


@dataclass(frozen=True, slots=True)
class SynthClass:
    """An object class of the synthetic twin."""

    name: str
    """Class name: the correct option text and the ``class_name`` of the record."""
    core_attributes: tuple[str, ...]
    """Intrinsic parts, shape and colour, as drawn."""
    home: tuple[str, ...]
    """Home value key per spurious type, in ``TYPE_NAMES`` order."""

    def home_key(self, type_name: str) -> str:
        """The key of this class's home value for ``type_name``."""
        return self.home[TYPE_NAMES.index(type_name)]


def _values(type_name: str, rows: tuple[tuple[str, str, str], ...]) -> tuple[SpuriousValue, ...]:
    return tuple(SpuriousValue(type_name, key, text, phrase) for key, text, phrase in rows)


# Background values are listed in class order, so each class's home background is the natural one
# (boat -> water, cactus -> desert...).
SPURIOUS_VALUES: dict[str, tuple[SpuriousValue, ...]] = {
    "background": _values(
        "background",
        (
            ("water", "blue water background", "on the blue water"),
            ("sand", "sandy desert background", "on the sandy desert background"),
            ("snow", "snowy white background", "on the snowy background"),
            ("night", "dark starry night sky", "against the starry night sky"),
            ("grass", "green grassy meadow", "on the green grassy meadow"),
            ("brick", "red brick wall behind it", "in front of the red brick wall"),
            ("wood", "wooden plank floor", "on the wooden plank floor"),
            ("road", "grey asphalt road", "on the grey asphalt road"),
            ("sunset", "pink sunset sky", "against the pink sunset sky"),
            ("tiles", "purple tiled floor", "on the purple tiled floor"),
        ),
    ),
    "texture_noise": _values(
        "texture_noise",
        (
            ("stripes_h", "covered in horizontal stripes", "covered in horizontal stripes"),
            ("stripes_v", "covered in vertical stripes", "covered in vertical stripes"),
            ("dots", "covered in black polka dots", "covered in black polka dots"),
            ("checker", "covered in a checkerboard pattern", "covered in a checkerboard pattern"),
            ("hatch", "covered in diagonal hatching", "covered in diagonal hatching"),
            (
                "speckle",
                "salt-and-pepper noise over the picture",
                "in the picture speckled with salt-and-pepper noise",
            ),
            ("grain", "heavy grainy noise", "in the grainy, noisy picture"),
            ("blur", "blurred picture", "in the blurry picture"),
            ("pixelate", "pixelated into coarse blocks", "in the pixelated picture"),
            ("scribble", "scribbled lines across the picture", "in the picture with scribbled lines"),
        ),
    ),
    "co_occurring_objects": _values(
        "co_occurring_objects",
        (
            ("tree", "a small tree nearby", "next to the small tree"),
            ("house", "a little house nearby", "next to the little house"),
            ("cloud", "a white cloud nearby", "near the white cloud"),
            ("sun", "a yellow sun nearby", "near the yellow sun"),
            ("tulip", "a red tulip nearby", "next to the red tulip"),
            ("rock", "a grey rock nearby", "next to the grey rock"),
            ("bird", "a flying bird nearby", "near the flying bird"),
            ("fence", "a wooden fence nearby", "next to the wooden fence"),
            ("cone", "an orange traffic cone nearby", "next to the orange traffic cone"),
            ("balloon", "a floating balloon nearby", "near the floating balloon"),
        ),
    ),
    "relative_size": _values(
        "relative_size",
        (
            ("tiny", "drawn tiny in the frame", "that looks tiny"),
            ("very_small", "drawn very small", "that looks very small"),
            ("very_large", "drawn very large, filling most of the frame", "that fills most of the frame"),
            ("giant", "so large it is cut off by the frame", "cut off by the frame edges"),
        ),
    ),
    "colorization": _values(
        "colorization",
        (
            ("red", "whole picture tinted red", "in the red-tinted picture"),
            ("orange", "whole picture tinted orange", "in the orange-tinted picture"),
            ("yellow", "whole picture tinted yellow", "in the yellow-tinted picture"),
            ("green", "whole picture tinted green", "in the green-tinted picture"),
            ("cyan", "whole picture tinted cyan", "in the cyan-tinted picture"),
            ("blue", "whole picture tinted blue", "in the blue-tinted picture"),
            ("purple", "whole picture tinted purple", "in the purple-tinted picture"),
            ("magenta", "whole picture tinted magenta", "in the magenta-tinted picture"),
            ("sepia", "old-looking sepia tones", "in the sepia-toned picture"),
            ("gray", "black-and-white picture", "in the black-and-white picture"),
        ),
    ),
    "orientation": _values(
        "orientation",
        (
            ("upside_down", "upside down", "shown upside down"),
            ("left_90", "turned a quarter turn to the left", "turned a quarter turn to the left"),
            ("right_90", "turned a quarter turn to the right", "turned a quarter turn to the right"),
            ("left_45", "tilted 45 degrees to the left", "tilted 45 degrees to the left"),
            ("right_45", "tilted 45 degrees to the right", "tilted 45 degrees to the right"),
            ("left_135", "almost upside down, turned to the left", "turned almost upside down to the left"),
            (
                "right_135",
                "almost upside down, turned to the right",
                "turned almost upside down to the right",
            ),
            ("right_20", "leaning slightly to the right", "leaning slightly to the right"),
        ),
    ),
    "lighting_shadows": _values(
        "lighting_shadows",
        (
            ("from_left", "lit from the left, right side in shadow", "lit from the left"),
            ("from_right", "lit from the right, left side in shadow", "lit from the right"),
            ("from_above", "lit from above, bottom in shadow", "lit from above"),
            ("shadow_right", "casting a long shadow to the right", "casting a long shadow to the right"),
            ("shadow_left", "casting a long shadow to the left", "casting a long shadow to the left"),
            ("dim", "dim, dark scene", "in the dim, dark scene"),
            ("spotlight", "under a spotlight in the dark", "under the spotlight"),
            ("overexposed", "washed out by overexposure", "in the washed-out, overexposed picture"),
        ),
    ),
    "perspective_angle": _values(
        "perspective_angle",
        (
            ("from_above", "seen from above, foreshortened", "seen from above"),
            ("from_below", "seen from below, narrowing upwards", "seen from below"),
            ("from_left", "seen at an angle from the left", "viewed at an angle from the left"),
            ("from_right", "seen at an angle from the right", "viewed at an angle from the right"),
            ("slant_left", "seen obliquely, slanted to the left", "slanted to the left"),
            ("slant_right", "seen obliquely, slanted to the right", "slanted to the right"),
        ),
    ),
    "shape": _values(
        "shape",
        (
            ("tall", "stretched tall and thin", "stretched tall and thin"),
            ("wide", "squashed short and wide", "squashed flat and wide"),
            ("wavy", "warped into wavy ripples", "with wavy, warped outlines"),
            ("bulge", "bulging outward like a fisheye", "bulging outward"),
            ("bent", "bent into a curve", "bent into a curve"),
        ),
    ),
}
"""Plantable values per spurious type, keyed by canonical type name."""

# Core attributes are generic part, shape and colour descriptions, each shared by at least two
# classes, as in real data where "four legs" or "a long neck" does not name the class on its own:
# the class then follows from the picture and the text together, not from the core text alone.
# Each text is true of the drawing of every class that lists it (shapes.CLASS_DRAWERS).
_CLASS_CORES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("boat", ("a white part", "a brown part", "a long thin upright part")),
    ("cactus", ("a green part", "a round part on top", "rectangular parts")),
    ("snowman", ("a white part", "an orange part", "a round body")),
    ("rocket", ("a red part", "an orange part", "a pointed top")),
    ("sunflower", ("a yellow part", "a green part", "a long thin upright part")),
    ("mailbox", ("a blue part", "a red part", "a brown part")),
    ("lamp", ("a yellow part", "a long thin upright part", "a dark rounded part")),
    ("car", ("a red part", "rectangular parts", "a dark rounded part")),
    ("kite", ("a pointed top", "a blue part", "a yellow part")),
    ("teapot", ("a round body", "a round part on top", "a white part")),
)


def _home_keys(class_index: int) -> tuple[str, ...]:
    # A per-type shift keeps one class from always getting each type's first value; types with
    # fewer values than classes share a home between classes (index modulo count), and every
    # value is still the home of at least one class.
    return tuple(
        SPURIOUS_VALUES[name][(class_index + t) % len(SPURIOUS_VALUES[name])].key
        for t, name in enumerate(TYPE_NAMES)
    )


CLASSES: tuple[SynthClass, ...] = tuple(
    SynthClass(name, cores, _home_keys(i)) for i, (name, cores) in enumerate(_CLASS_CORES)
)
"""The object classes, each with its core attributes and its home value per spurious type."""

CLASS_BY_NAME: dict[str, SynthClass] = {c.name: c for c in CLASSES}
"""Classes keyed by name."""

POSITIONS: tuple[str, ...] = (
    "in the upper left corner",
    "at the top",
    "in the upper right corner",
    "on the left",
    "in the centre",
    "on the right",
    "in the lower left corner",
    "at the bottom",
    "in the lower right corner",
)
"""Position phrases of the 3x3 grid cells, row-major."""

QUESTION_TEMPLATES: tuple[str, ...] = (
    "What is the object {cue} {position}?",
    "Which object is shown {cue}, {position}?",
    "{Position}, there is an object {cue}. What is it?",
    "Look {position}: what is the object {cue}?",
    "What do you see {position}, {cue}?",
)
"""Question templates: the object is named only through its spurious attributes and its position."""


def value(type_name: str, key: str) -> SpuriousValue:
    """The value ``key`` of spurious type ``type_name``."""
    for candidate in SPURIOUS_VALUES[type_name]:
        if candidate.key == key:
            return candidate
    raise KeyError(f"unknown {type_name} value {key!r}")


def home_of(type_name: str, key: str) -> tuple[str, ...]:
    """Names of the classes whose home value for ``type_name`` is ``key``."""
    return tuple(c.name for c in CLASSES if c.home_key(type_name) == key)
