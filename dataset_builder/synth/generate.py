"""The synthetic twin of MM-SpuBench: procedurally drawn items in the raw release layout.

Each item shows one object class (its core attributes: intrinsic parts, shape, colour) with one or
two planted spurious values made visible in the picture. The question names the object only by
its spurious attributes and position; the options are the class name and three misleading classes,
preferably those whose home value is the planted one, so a model following the cue picks them.

Two modes:

- ``benchmark``: types and classes cycle in seeded blocks (all nine types present once n >= 9),
  and by default every planted value is the home of a misleading class (``cue="broken"``), like the
  real benchmark, whose images were selected because the spurious cue misleads.
- ``train``: types and classes drawn independently; with probability ``correlation`` (default
  0.9) the planted values are the true class's home values, else those of another class. For
  evaluation sets, ``cue`` fixes the policy instead: ``aligned``, ``broken`` or ``random``
  (uniform values, no correlation with the class).

Two confounds can be planted on top, as positive controls of the confound views
(``confounds``): a letter bias (``letter_bias``: the gold answer mostly at one letter) and a
text prior (``text_prior_types``: the question names the class on those types).

Everything is a function of (index, seed, image size, mode, policy): the same arguments give
byte-identical images and annotations, and item ``i`` does not depend on ``n``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mmspubench.dataset_builder.defaults import (
    CUES,
    DEFAULT_IMAGE_SIZE,
    DEFAULT_SEED,
    DEFAULT_TRAIN_CORRELATION,
    GENERATOR_VERSION,
    MODES,
)
from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, TYPE_NAMES, Item
from mmspubench.dataset_builder.synth.confounds import (
    biased_slot,
    check_letter_bias,
    check_types,
    with_text_prior,
)
from mmspubench.dataset_builder.synth.draw import SceneSpec, render_scene
from mmspubench.dataset_builder.synth.vocab import (
    CLASS_BY_NAME,
    CLASSES,
    POSITIONS,
    QUESTION_TEMPLATES,
    SPURIOUS_VALUES,
    SynthClass,
    home_of,
    value,
)
from mmspubench.errors import MMSpuBenchError

MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 32, 2048
SECOND_TYPE_PROBABILITY = 1 / 3
LARGE_SIZES = frozenset({"very_large", "giant"})
"""Relative-size values whose object is too large to sit anywhere but the centre."""

__all__ = [
    "CLASSES",
    "CUES",
    "DEFAULT_IMAGE_SIZE",
    "GENERATOR_VERSION",
    "MODES",
    "SPURIOUS_VALUES",
    "SynthConfig",
    "SynthItem",
    "class_info",
    "generate_items",
    "home_of",
    "make_item",
    "value",
    "write_release",
]


@dataclass(frozen=True, slots=True)
class SynthConfig:
    """How items are generated; validated on construction."""

    seed: int = DEFAULT_SEED
    """Base seed; every item derives its own stream from (seed, index)."""
    image_size: int = DEFAULT_IMAGE_SIZE
    """Side of the square images, in pixels."""
    mode: str = "benchmark"
    """``benchmark`` (balanced blocks of types and classes) or ``train`` (independent draws)."""
    correlation: float | None = None
    """Probability that the planted values are the true class's home values."""
    cue: str | None = None
    """Fixed planting policy instead of a correlation: ``aligned``, ``broken`` or ``random``."""
    correlated_types: tuple[str, ...] | None = None
    """Train mode only: plant the correlated cue on these types alone, values of the other types
    drawn uniformly (``None``: every type correlated). A per-type positive control."""
    letter_bias: tuple[str, float] | None = None
    """Plant a letter bias: ``(letter, share)`` puts the gold answer at ``letter`` with probability
    ``share``, else at one of the other letters uniformly (``None``: letters balanced in blocks of
    four). A positive control of circular evaluation (``confounds``)."""
    text_prior_types: tuple[str, ...] | None = None
    """Plant a text prior: items with one of these types name their class in the question
    (``None``: no question names it). A positive control of the blind baseline."""

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise MMSpuBenchError(f"synth: seed {self.seed!r}: expected a non-negative integer")
        if not MIN_IMAGE_SIZE <= self.image_size <= MAX_IMAGE_SIZE:
            raise MMSpuBenchError(
                f"synth: image size {self.image_size!r}: expected {MIN_IMAGE_SIZE}..{MAX_IMAGE_SIZE} pixels"
            )
        if self.mode not in MODES:
            raise MMSpuBenchError(f"synth: mode {self.mode!r}: expected one of {', '.join(MODES)}")
        if self.correlation is not None and self.cue is not None:
            raise MMSpuBenchError("synth: give either a correlation or a cue, not both")
        if self.correlation is not None and not 0.0 <= self.correlation <= 1.0:
            raise MMSpuBenchError(f"synth: correlation {self.correlation!r}: expected a number in [0, 1]")
        if self.cue is not None and self.cue not in CUES:
            raise MMSpuBenchError(f"synth: cue {self.cue!r}: expected one of {', '.join(CUES)}")
        if self.correlated_types is not None:
            _check_correlated_types(self)
        if self.letter_bias is not None:
            check_letter_bias(self.letter_bias)
        if self.text_prior_types is not None:
            check_types("text prior types", self.text_prior_types)

    @property
    def policy(self) -> tuple[str, float]:
        """The planting policy as (cue, correlation): the correlation is used when the cue is "correlated"."""
        if self.cue is not None:
            return self.cue, 0.0
        if self.correlation is not None:
            return "correlated", self.correlation
        return ("broken", 0.0) if self.mode == "benchmark" else ("correlated", DEFAULT_TRAIN_CORRELATION)


def _check_correlated_types(config: SynthConfig) -> None:
    types = config.correlated_types or ()
    if config.mode != "train" or config.cue is not None:
        raise MMSpuBenchError("synth: correlated types need --mode train and a correlation, not a cue")
    unknown = [t for t in types if t not in TYPE_NAMES]
    if unknown or not types or len(set(types)) != len(types):
        raise MMSpuBenchError(
            f"synth: correlated types {list(types)!r}: expected distinct names among {', '.join(TYPE_NAMES)}"
        )


@dataclass(frozen=True, slots=True)
class SynthItem(Item):
    """One generated item: the benchmark fields (``schema.Item``, image drawn) and how it was planted."""

    scene: SceneSpec
    """The scene the image was rendered from."""
    cue_aligned: bool
    """Whether every planted value is the true class's home value."""
    decoy: str | None
    """Class whose home values were planted instead of the true class's (broken cue), else None."""

    @property
    def image_path(self) -> str:
        """Path of the image inside a raw release."""
        return f"data/images/{self.id}.png"

    def record(self) -> dict[str, Any]:
        """The ``annotation.json`` record of this item (the image by its path in the release)."""
        return {**self.to_example(), "image": self.image_path}


def _block_permutation(seed: int, salt: int, index: int, size: int) -> int:
    # Seeded permutation per block of `size` consecutive items: balanced counts, and item i
    # depends only on its own block, never on n.
    block, slot = divmod(index, size)
    return int(np.random.default_rng([seed, salt, block]).permutation(size)[slot])


def _pick_types(index: int, config: SynthConfig, rng: np.random.Generator) -> tuple[str, ...]:
    if config.mode == "benchmark":
        first = TYPE_NAMES[_block_permutation(config.seed, 1, index, len(TYPE_NAMES))]
    else:
        first = TYPE_NAMES[int(rng.integers(len(TYPE_NAMES)))]
    if rng.random() >= SECOND_TYPE_PROBABILITY:
        return (first,)
    others = [name for name in TYPE_NAMES if name != first]
    second = others[int(rng.integers(len(others)))]
    # Records list types in canonical order, whatever order they were drawn in.
    return tuple(name for name in TYPE_NAMES if name in (first, second))


def _pick_class(index: int, config: SynthConfig, rng: np.random.Generator) -> SynthClass:
    if config.mode == "benchmark":
        return CLASSES[_block_permutation(config.seed, 2, index, len(CLASSES))]
    return CLASSES[int(rng.integers(len(CLASSES)))]


def _plant(
    true: SynthClass, types: tuple[str, ...], config: SynthConfig, rng: np.random.Generator
) -> tuple[tuple[str, ...], str | None]:
    """Planted value keys (one per type) and the decoy class, if the cue was broken."""
    if config.correlated_types is not None:
        return _plant_on_types(true, types, config.correlated_types, config.policy[1], rng)
    cue, correlation = config.policy
    if cue == "correlated":
        cue = "aligned" if rng.random() < correlation else "broken"
    if cue == "aligned":
        return tuple(true.home_key(t) for t in types), None
    if cue == "random":
        keys = []
        for t in types:
            values = SPURIOUS_VALUES[t]
            keys.append(values[int(rng.integers(len(values)))].key)
        return tuple(keys), None
    decoys = [c for c in CLASSES if all(c.home_key(t) != true.home_key(t) for t in types)]
    decoy = decoys[int(rng.integers(len(decoys)))]
    return tuple(decoy.home_key(t) for t in types), decoy.name


def _random_key(spurious_type: str, rng: np.random.Generator) -> str:
    values = SPURIOUS_VALUES[spurious_type]
    return values[int(rng.integers(len(values)))].key


def _plant_on_types(
    true: SynthClass,
    types: tuple[str, ...],
    correlated: tuple[str, ...],
    correlation: float,
    rng: np.random.Generator,
) -> tuple[tuple[str, ...], str | None]:
    """Like ``_plant`` with a correlation, but only the ``correlated`` types carry the cue."""
    cued = [t for t in types if t in correlated]
    decoy = None
    if cued and rng.random() >= correlation:
        decoys = [c for c in CLASSES if all(c.home_key(t) != true.home_key(t) for t in cued)]
        decoy = decoys[int(rng.integers(len(decoys)))]
    keys = []
    for t in types:
        if t not in cued:
            keys.append(_random_key(t, rng))
        else:
            keys.append((true if decoy is None else decoy).home_key(t))
    return tuple(keys), None if decoy is None else decoy.name


def _misleading(
    true: SynthClass,
    types: tuple[str, ...],
    keys: tuple[str, ...],
    decoy: str | None,
    rng: np.random.Generator,
) -> list[str]:
    """Three wrong class names: the decoy, then classes at home with a planted value, then others."""
    lured = [name for t, k in zip(types, keys, strict=True) for name in home_of(t, k)]
    lured = [name for name in lured if name != true.name and name != decoy]
    rest = [c.name for c in CLASSES if c.name != true.name and c.name != decoy and c.name not in lured]
    ordered = ([decoy] if decoy else []) + list(dict.fromkeys(rng.permutation(lured).tolist()))
    ordered += rng.permutation(rest).tolist()
    return [str(name) for name in ordered[:3]]


def _question(types: tuple[str, ...], keys: tuple[str, ...], cell: int, rng: np.random.Generator) -> str:
    cue = " and ".join(value(t, k).phrase for t, k in zip(types, keys, strict=True))
    template = QUESTION_TEMPLATES[int(rng.integers(len(QUESTION_TEMPLATES)))]
    position = POSITIONS[cell]
    return template.format(cue=cue, position=position, Position=position[0].upper() + position[1:])


def make_item(index: int, config: SynthConfig) -> SynthItem:
    """Item number ``index`` of the stream described by ``config`` (random access, no files)."""
    rng = np.random.default_rng([config.seed, index])
    types = _pick_types(index, config, rng)
    true = _pick_class(index, config, rng)
    keys, decoy = _plant(true, types, config, rng)
    size_key = keys[types.index("relative_size")] if "relative_size" in types else None
    cell = 4 if size_key in LARGE_SIZES else int(rng.integers(9))
    offset = rng.uniform(-0.04, 0.04, 2)
    scene = SceneSpec(
        class_name=true.name,
        cell=cell,
        offset=(float(offset[0]), float(offset[1])),
        scale=float(rng.uniform(0.44, 0.54)),
        planted=tuple(zip(types, keys, strict=True)),
        noise_seed=int(rng.integers(2**31)),
    )
    wrong = [
        wrong_name for wrong_name in rng.permutation(_misleading(true, types, keys, decoy, rng)).tolist()
    ]
    if config.letter_bias is None:
        slot = _block_permutation(config.seed, 3, index, len(ANSWER_LETTERS))
    else:
        slot = biased_slot(config.seed, index, config.letter_bias)
    options = (*wrong[:slot], true.name, *wrong[slot:])
    return SynthItem(
        id=f"{index:06d}",
        image=render_scene(scene, config.image_size),
        question=with_text_prior(
            _question(types, keys, cell, rng), true.name, types, config.text_prior_types
        ),
        options=tuple(str(o) for o in options),
        answer=ANSWER_LETTERS[slot],
        class_name=true.name,
        core_attributes=true.core_attributes,
        spurious_attributes=tuple(value(t, k).text for t, k in zip(types, keys, strict=True)),
        spurious_types=types,
        scene=scene,
        cue_aligned=all(true.home_key(t) == k for t, k in zip(types, keys, strict=True)),
        decoy=decoy,
        source="synthetic",
    )


def generate_items(
    n: int,
    *,
    seed: int = DEFAULT_SEED,
    image_size: int = DEFAULT_IMAGE_SIZE,
    mode: str = "benchmark",
    correlation: float | None = None,
    cue: str | None = None,
    correlated_types: Iterable[str] | None = None,
    letter_bias: tuple[str, float] | None = None,
    text_prior_types: Iterable[str] | None = None,
) -> Iterator[SynthItem]:
    """Items ``0..n-1``, generated lazily; arguments are validated before the first item."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise MMSpuBenchError(f"synth: n {n!r}: expected a non-negative integer")
    chosen = None if correlated_types is None else tuple(correlated_types)
    config = SynthConfig(
        seed=seed,
        image_size=image_size,
        mode=mode,
        correlation=correlation,
        cue=cue,
        correlated_types=chosen,
        letter_bias=letter_bias,
        text_prior_types=None if text_prior_types is None else tuple(text_prior_types),
    )
    return (make_item(index, config) for index in range(n))


def _write_into(folder: Path, items: Iterable[SynthItem], counterfactuals: bool) -> int:
    from mmspubench.dataset_builder.synth.counterfactuals import write_counterfactuals

    images = folder / "data" / "images"
    images.mkdir(parents=True)
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise MMSpuBenchError(f"synth: record {item.id!r}: field 'id': duplicate id")
        seen.add(item.id)
        item.pil_image.save(folder / item.image_path, format="PNG")
        record = item.record()
        if counterfactuals:
            record["counterfactuals"] = write_counterfactuals(folder, item)
        records.append(record)
    text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    (folder / "annotation.json").write_text(text, encoding="utf-8")
    return len(records)


def write_release(
    out: Path, items: Iterable[SynthItem], *, overwrite: bool = False, counterfactuals: bool = False
) -> Path:
    """Write ``items`` as a raw release (``annotation.json`` + ``data/images/``) at ``out``.

    ``counterfactuals``: also write each item's counterfactual images (``synth.counterfactuals``)
    under ``data/images/counterfactuals/`` and list them in its record.

    The release is written into a temporary sibling folder and renamed into place, so ``out``
    never holds a partial release. An existing ``out`` is refused unless ``overwrite``.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise MMSpuBenchError(f"{out}: output folder already exists (pass --overwrite to replace it)")
    replace_folder(out, lambda folder: _write_into(folder, items, counterfactuals))
    return out


def class_info(name: str) -> SynthClass:
    """Metadata of class ``name`` (core attributes, home values)."""
    try:
        return CLASS_BY_NAME[name]
    except KeyError:
        raise MMSpuBenchError(
            f"synth: unknown class {name!r}: expected one of {', '.join(CLASS_BY_NAME)}"
        ) from None
