"""Exact counterfactuals of a synthetic item: its scene re-rendered with the planted cues changed.

Only ``SceneSpec.planted`` changes; the object class, grid cell, jitter, default scale and noise
seed are kept, and so are the item's question, options and answer. Three conditions, each
targeting every planted type of the item (the published image is the fourth, ``cue-broken`` in
benchmark mode: a misleading class's home values):

- ``cue-aligned``: the true class's home value on each planted type (``SynthClass.home_key``).
- ``cue-random``: for each planted type a value drawn uniformly from all that type's values, from
  a generator seeded by the item's noise seed and a fixed salt, never looking at the class: the
  value is independent of the class (it is the true class's home value by chance, with probability
  one over the number of values, as under ``--cue random``).
- ``cue-removed``: the type not planted at all, which ``draw.render_scene`` draws as: a
  neutral grey background (BG); no pattern, blur or noise (TN); no co-occurring object (CO); no
  tint (Col.); even lighting and no cast shadow (LS). Four types cannot be removed without the
  object itself, so their neutral value is the object's default rendering: its default size (the
  scene's ``scale``; the grid cell is kept) (RS), upright (Ori.), seen flat from the front (PA), its
  undistorted outline (Sha.).

Decorations drawn from the scene's noise seed (a background's scattered marks, the co-object's side
when the object is centred, grain and speckle) follow the values drawn, from the same seed.
Rendering is ``draw.render_scene``, so the images are the same bytes on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from mmspubench.dataset_builder.schema import TYPE_ABBREV
from mmspubench.dataset_builder.synth.draw import SceneSpec, render_scene
from mmspubench.dataset_builder.synth.vocab import CLASS_BY_NAME, SPURIOUS_VALUES, value

if TYPE_CHECKING:
    from mmspubench.dataset_builder.synth.generate import SynthItem
    from PIL.Image import Image

CONDITIONS: tuple[str, ...] = ("cue-aligned", "cue-random", "cue-removed")
"""Counterfactual names, in the order they are written."""
RANDOM_SALT = 0x5EED_C0DE
"""Salt of the ``cue-random`` generator: keeps its draws apart from the item's own stream."""
COUNTERFACTUALS_DIR = "data/images/counterfactuals"
"""Where a raw release keeps the counterfactual images (``<id>-<name>.png``)."""

REMOVED: dict[str, str] = {
    "background": "neutral grey background",
    "texture_noise": "no texture or noise",
    "co_occurring_objects": "no co-occurring object",
    "relative_size": "the object's default size",
    "colorization": "no tint",
    "orientation": "upright",
    "lighting_shadows": "even lighting, no shadow",
    "perspective_angle": "flat frontal view",
    "shape": "undistorted outline",
}
"""What ``cue-removed`` draws for each type (the type left out of ``SceneSpec.planted``)."""


@dataclass(frozen=True, slots=True)
class CounterfactualScene:
    """One counterfactual of an item, before rendering."""

    name: str
    """Condition name (``CONDITIONS``)."""
    scene: SceneSpec
    """The item's scene with only ``planted`` changed."""
    targets: tuple[str, ...]
    """The planted types it changes: all of the item's."""
    description: str
    """One line saying what was changed."""


def _values_text(planted: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{TYPE_ABBREV[t]} {value(t, k).text}" for t, k in planted)


def counterfactual_scenes(scene: SceneSpec) -> tuple[CounterfactualScene, ...]:
    """The three counterfactual scenes of ``scene`` (``CONDITIONS`` order)."""
    types = tuple(t for t, _ in scene.planted)
    true = CLASS_BY_NAME[scene.class_name]
    aligned = tuple((t, true.home_key(t)) for t in types)
    rng = np.random.default_rng([scene.noise_seed, RANDOM_SALT])
    random = tuple((t, SPURIOUS_VALUES[t][int(rng.integers(len(SPURIOUS_VALUES[t])))].key) for t in types)
    removed = ", ".join(f"{TYPE_ABBREV[t]} {REMOVED[t]}" for t in types)
    return (
        CounterfactualScene(
            "cue-aligned",
            replace(scene, planted=aligned),
            types,
            f"planted values set to the home values of {true.name}: {_values_text(aligned)}",
        ),
        CounterfactualScene(
            "cue-random",
            replace(scene, planted=random),
            types,
            f"planted values drawn independently of the class: {_values_text(random)}",
        ),
        CounterfactualScene(
            "cue-removed", replace(scene, planted=()), types, f"planted cues removed: {removed}"
        ),
    )


def text_names_cue(item: SynthItem) -> bool:
    """Whether the item's question names its planted cue (every planted value's question phrase).

    The counterfactuals keep the question as published, so where it names the cue, the text still
    names the published value beside an image whose value changed: the image's channel moves, the
    text's does not (the twin's question templates always name it).
    """
    return all(value(t, k).phrase in item.question for t, k in item.scene.planted)


def image_path(item_id: str, name: str) -> str:
    """Path of a counterfactual image inside a raw release."""
    return f"{COUNTERFACTUALS_DIR}/{item_id}-{name}.png"


def render_counterfactuals(item: SynthItem) -> tuple[tuple[CounterfactualScene, Image], ...]:
    """Each counterfactual scene of ``item`` with its image, at the item's image size."""
    size = item.pil_image.width
    return tuple((cf, render_scene(cf.scene, size)) for cf in counterfactual_scenes(item.scene))


def write_counterfactuals(folder: Path, item: SynthItem) -> list[dict[str, Any]]:
    """Save ``item``'s counterfactual images under ``folder`` and return their record entries."""
    (folder / COUNTERFACTUALS_DIR).mkdir(parents=True, exist_ok=True)
    entries = []
    for cf, image in render_counterfactuals(item):
        path = image_path(item.id, cf.name)
        image.save(folder / path, format="PNG")
        entries.append(
            {"image": path, "name": cf.name, "targets": list(cf.targets), "description": cf.description}
        )
    return entries
