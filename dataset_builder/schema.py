"""The one record schema of MM-SpuBench (DESIGN.md, "Record schema").

Every part of the distribution -- builder, card generator, eval loader and Space -- imports
``FEATURES`` and the name tables from here; nothing else defines them.
"""

from __future__ import annotations

from dataclasses import dataclass

import datasets


@dataclass(frozen=True, slots=True)
class SpuriousType:
    """One of the nine spurious-correlation types of the paper (section 4.1)."""

    name: str
    """Canonical name, used as the ClassLabel name."""
    abbrev: str
    """Abbreviation used in the paper's tables (Table 1 and 2)."""
    title: str
    """Human-readable title."""


SPURIOUS_TYPES: tuple[SpuriousType, ...] = (
    SpuriousType("background", "BG", "Background"),
    SpuriousType("texture_noise", "TN", "Texture and Noise"),
    SpuriousType("co_occurring_objects", "CO", "Co-occurring Objects"),
    SpuriousType("relative_size", "RS", "Relative Size"),
    SpuriousType("colorization", "Col.", "Colorization"),
    SpuriousType("orientation", "Ori.", "Orientation"),
    SpuriousType("lighting_shadows", "LS", "Lighting and Shadows"),
    SpuriousType("perspective_angle", "PA", "Perspective and Angle"),
    SpuriousType("shape", "Sha.", "Shape"),
)
TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in SPURIOUS_TYPES)
TYPE_ABBREV: dict[str, str] = {t.name: t.abbrev for t in SPURIOUS_TYPES}
ABBREV_TYPE: dict[str, str] = {t.abbrev: t.name for t in SPURIOUS_TYPES}

SOURCES: tuple[str, ...] = (
    "ObjectNet",
    "ImageNet-R",
    "ImageNet-Sketch",
    "ImageNet-A",
    "ImageNet-C",
    "synthetic",
)
ANSWER_LETTERS: tuple[str, ...] = ("A", "B", "C", "D")
NUM_OPTIONS = 4
MIN_ATTRIBUTES, MAX_ATTRIBUTES = 1, 5
MIN_TYPES, MAX_TYPES = 1, 2

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "options": datasets.List(datasets.Value("string"), length=NUM_OPTIONS),
        "answer": datasets.ClassLabel(names=list(ANSWER_LETTERS)),
        "class_name": datasets.Value("string"),
        "core_attributes": datasets.List(datasets.Value("string")),
        "spurious_attributes": datasets.List(datasets.Value("string")),
        "spurious_types": datasets.List(datasets.ClassLabel(names=list(TYPE_NAMES))),
        "source": datasets.ClassLabel(names=list(SOURCES)),
    }
)
"""Features of config ``default``, split ``test``."""

REQUIRED_FIELDS: tuple[str, ...] = tuple(FEATURES)
"""Every field is required in a built record."""

__all__ = [
    "ABBREV_TYPE",
    "ANSWER_LETTERS",
    "FEATURES",
    "MAX_ATTRIBUTES",
    "MAX_TYPES",
    "MIN_ATTRIBUTES",
    "MIN_TYPES",
    "NUM_OPTIONS",
    "REQUIRED_FIELDS",
    "SOURCES",
    "SPURIOUS_TYPES",
    "TYPE_ABBREV",
    "TYPE_NAMES",
    "SpuriousType",
]
