"""The one record schema of MM-SpuBench (docs/DESIGN.md, "Record schema"), and its one item type.

Every part of the distribution -- builder, card generator, eval loader and Space -- imports
``FEATURES``, the name tables and :class:`Item` from here; nothing else defines them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
from mmspubench.errors import record_error

if TYPE_CHECKING:
    from PIL.Image import Image


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
TYPE_LABEL: dict[str, str] = {t.name: f"{t.title} ({t.abbrev})" for t in SPURIOUS_TYPES}
"""How the apps (the Space's filters and item view, the review app) name each canonical type."""
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

COUNTERFACTUALS_FIELD = "counterfactuals"
COUNTERFACTUALS_FEATURE = datasets.List(
    {
        "image": datasets.Image(),
        "name": datasets.Value("string"),
        "targets": datasets.List(datasets.ClassLabel(names=list(TYPE_NAMES))),
        "description": datasets.Value("string"),
    }
)
"""The optional ``counterfactuals`` field: the item's scene re-rendered with its cues changed."""

FEATURES_WITH_COUNTERFACTUALS = datasets.Features(
    {**FEATURES, COUNTERFACTUALS_FIELD: COUNTERFACTUALS_FEATURE}
)
"""Features of a build where some item has counterfactuals. A build where none has them keeps
``FEATURES`` exactly (no empty column), so its Parquet, card and content hash are unchanged."""


def features_for(with_counterfactuals: bool) -> datasets.Features:
    """``FEATURES_WITH_COUNTERFACTUALS`` when some item has counterfactuals, else ``FEATURES``."""
    return FEATURES_WITH_COUNTERFACTUALS if with_counterfactuals else FEATURES


@dataclass(frozen=True, slots=True)
class Counterfactual:
    """One counterfactual image of an item: the same scene with its planted cues changed."""

    image: Image | Path
    """The picture: decoded when read from a dataset; the file's absolute path in a validated record."""
    name: str
    """Condition name, unique within the item, e.g. ``"cue-aligned"`` (``[a-z0-9-]+``)."""
    targets: tuple[str, ...]
    """Canonical type names whose values it changes (a subset of the item's spurious types)."""
    description: str
    """One line saying what was changed."""

    def to_example(self) -> dict[str, Any]:
        """The ``COUNTERFACTUALS_FEATURE`` element (a path image is embedded when written)."""
        image = {"path": str(self.image), "bytes": None} if isinstance(self.image, Path) else self.image
        return {
            "image": image,
            "name": self.name,
            "targets": list(self.targets),
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class Item:
    """One benchmark item: the fields of ``FEATURES``, with ClassLabel values as their names.

    The one item type of the distribution: the raw reader, the synthetic generator, the evaluator
    and the Space all use it. Data only one of them has rides alongside (the synthetic scene in
    ``synth.SynthItem``), never in a copy of these fields.
    """

    id: str
    """Stable item id, e.g. ``"000042"``."""
    image: Image | Path
    """The picture: decoded (RGB) when read from a dataset or drawn; the file's absolute path in a
    record validated from a raw release (the builder embeds the file)."""
    question: str
    """Multiple-choice question text."""
    options: tuple[str, ...]
    """The four option texts, without their ``A.`` prefixes."""
    answer: str
    """Correct option letter, ``A``..``D``."""
    class_name: str
    """Ground-truth class name: the continuation scored by CGL."""
    core_attributes: tuple[str, ...]
    """Core attribute texts (1-5)."""
    spurious_attributes: tuple[str, ...]
    """Spurious attribute texts (1-5)."""
    spurious_types: tuple[str, ...]
    """Canonical spurious-type names (1-2), e.g. ``("background",)``."""
    source: str
    """Source dataset name, e.g. ``ObjectNet``."""
    counterfactuals: tuple[Counterfactual, ...] = field(default=(), kw_only=True)
    """Optional counterfactual images of the same scene (empty for most releases)."""

    @property
    def pil_image(self) -> Image:
        """The decoded picture; a record validated from a raw release holds a path instead."""
        if isinstance(self.image, Path):
            raise TypeError(f"item {self.id!r}: image not decoded ({self.image})")
        return self.image

    def to_example(self, *, with_counterfactuals: bool = False) -> dict[str, Any]:
        """The ``FEATURES`` example (a path image is read and embedded when the dataset is written);
        ``with_counterfactuals``: the ``FEATURES_WITH_COUNTERFACTUALS`` example instead."""
        image = {"path": str(self.image), "bytes": None} if isinstance(self.image, Path) else self.image
        extra = (
            {COUNTERFACTUALS_FIELD: [c.to_example() for c in self.counterfactuals]}
            if with_counterfactuals
            else {}
        )
        return {
            "id": self.id,
            "image": image,
            "question": self.question,
            "options": list(self.options),
            "answer": self.answer,
            "class_name": self.class_name,
            "core_attributes": list(self.core_attributes),
            "spurious_attributes": list(self.spurious_attributes),
            "spurious_types": list(self.spurious_types),
            "source": self.source,
            **extra,
        }

    @staticmethod
    def from_row(row: Mapping[str, Any], where: str) -> Item:
        """One dataset row (as ``datasets`` yields it) -> ``Item``, image decoded to RGB.

        ClassLabel integers become names (a hand-made dataset may already hold names). Raises
        ``MMSpuBenchError`` naming ``where``, the row id and the field when a value is malformed.
        """
        row_id = str(row["id"])
        types = row["spurious_types"]
        if not isinstance(types, list | tuple) or not MIN_TYPES <= len(types) <= MAX_TYPES:
            raise record_error(where, row_id, "spurious_types", f"bad value {types!r}; expected 1 or 2 types")
        image = row["image"]
        if not hasattr(image, "convert"):
            raise record_error(
                where, row_id, "image", f"bad value of type {type(image).__name__}; expected an image"
            )
        return Item(
            id=row_id,
            image=image.convert("RGB"),
            question=str(row["question"]),
            options=_texts(row, "options", where, row_id, NUM_OPTIONS, NUM_OPTIONS),
            answer=label_name(row["answer"], ANSWER_LETTERS, where, row_id, "answer"),
            class_name=str(row["class_name"]),
            core_attributes=_texts(row, "core_attributes", where, row_id, MIN_ATTRIBUTES, MAX_ATTRIBUTES),
            spurious_attributes=_texts(
                row, "spurious_attributes", where, row_id, MIN_ATTRIBUTES, MAX_ATTRIBUTES
            ),
            spurious_types=tuple(label_name(t, TYPE_NAMES, where, row_id, "spurious_types") for t in types),
            source=label_name(row["source"], SOURCES, where, row_id, "source"),
            counterfactuals=_counterfactuals(row, where, row_id),
        )


def label_name(value: Any, names: Sequence[str], where: str, row_id: str, field: str) -> str:
    """A ClassLabel value as its name: a built dataset stores the index, a hand-made one may already
    hold the name; anything else is a record error naming ``where``, ``row_id`` and ``field``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value in names:
        return value
    raise record_error(where, row_id, field, f"bad value {value!r}; expected one of {list(names)}")


def _counterfactuals(row: Mapping[str, Any], where: str, row_id: str) -> tuple[Counterfactual, ...]:
    value = row.get(COUNTERFACTUALS_FIELD) or []
    if not isinstance(value, list | tuple):
        raise record_error(where, row_id, COUNTERFACTUALS_FIELD, f"bad value {value!r}; expected a list")
    out = []
    for entry in value:
        if not isinstance(entry, Mapping) or not hasattr(entry.get("image"), "convert"):
            raise record_error(where, row_id, COUNTERFACTUALS_FIELD, "entry without a decoded image")
        image = entry["image"]
        out.append(
            Counterfactual(
                image=image.convert("RGB"),
                name=str(entry["name"]),
                targets=tuple(
                    label_name(t, TYPE_NAMES, where, row_id, COUNTERFACTUALS_FIELD) for t in entry["targets"]
                ),
                description=str(entry["description"]),
            )
        )
    return tuple(out)


def _texts(
    row: Mapping[str, Any], field: str, where: str, row_id: str, low: int, high: int
) -> tuple[str, ...]:
    value = row[field]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise record_error(where, row_id, field, f"bad value {value!r}; expected a list of strings")
    if not low <= len(value) <= high:
        raise record_error(where, row_id, field, f"has {len(value)} entries; expected {low} to {high}")
    return tuple(value)


__all__ = [
    "ABBREV_TYPE",
    "ANSWER_LETTERS",
    "COUNTERFACTUALS_FEATURE",
    "COUNTERFACTUALS_FIELD",
    "FEATURES",
    "FEATURES_WITH_COUNTERFACTUALS",
    "MAX_ATTRIBUTES",
    "MAX_TYPES",
    "MIN_ATTRIBUTES",
    "MIN_TYPES",
    "NUM_OPTIONS",
    "REQUIRED_FIELDS",
    "SOURCES",
    "SPURIOUS_TYPES",
    "TYPE_ABBREV",
    "TYPE_LABEL",
    "TYPE_NAMES",
    "Counterfactual",
    "Item",
    "SpuriousType",
    "features_for",
    "label_name",
]
