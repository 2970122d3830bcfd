"""What the interventions view shows: each item's image changed by each intervention of the run.

A built-in intervention transforms the item's image (:func:`mmspubench.eval.interventions.apply`,
made once per image and intervention, cached by the source's digest); ``cf:NAME`` shows the
dataset's own counterfactual image of that name. The question, the options and their order stay
the published ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import COUNTERFACTUALS_FIELD, Item
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval import interventions
from mmspubench.eval.config import RunConfig
from mmspubench.eval.intervention_names import CF_PREFIX, expected_names, uses_counterfactuals

if TYPE_CHECKING:
    import datasets


@dataclass(frozen=True, slots=True)
class Shown:
    """One changed image of an item, as asked."""

    name: str
    """The intervention's name as recorded (``grayscale``, ``cf:cue-aligned``)."""
    targets: tuple[str, ...]
    """Canonical type names whose channel it changes."""
    image: Any
    """The image shown (RGB, the item image's size for the built-ins)."""
    digest: str
    """``interventions.pixel_digest`` of ``image``."""


def check_dataset(dataset: datasets.Dataset, config: RunConfig, where: str) -> None:
    """A run asking ``cf:`` names needs a dataset whose records have counterfactuals."""
    if "interventions" not in config.metrics or not uses_counterfactuals(config.interventions):
        return
    if COUNTERFACTUALS_FIELD not in dataset.column_names:
        asked = next(n for n in config.interventions if n.startswith(CF_PREFIX))
        raise MMSpuBenchError(
            f"{where}: --interventions {asked} needs counterfactual images, but no record has the "
            f"{COUNTERFACTUALS_FIELD!r} field (make them with mmspubench synth --counterfactuals)"
        )


def shown_of(item: Item, config: RunConfig, where: str) -> tuple[Shown, ...]:
    """The changed images of ``item`` in the run's order (``cf:*`` expanded to the item's own)."""
    shipped = {c.name: c for c in item.counterfactuals}
    names = expected_names(config.interventions, [c.name for c in item.counterfactuals])
    if isinstance(names, str):
        raise record_error(where, item.id, COUNTERFACTUALS_FIELD, names)
    out = []
    for name in names:
        if name.startswith(CF_PREFIX):
            cf = shipped[name[len(CF_PREFIX) :]]
            image = interventions.to_rgb(cf.image)  # a decoded record's image (never a path here)
            out.append(Shown(name, cf.targets, image, interventions.pixel_digest(image)))
        else:
            image, digest = interventions.apply(name, item.pil_image)
            out.append(Shown(name, interventions.INTERVENTIONS[name].targets, image, digest))
    return tuple(out)


def shown_per_item(items: Sequence[Item], config: RunConfig, where: str) -> list[tuple[Shown, ...]]:
    """:func:`shown_of` of every item (nothing when the run does not compute ``interventions``)."""
    if "interventions" not in config.metrics:
        return [() for _ in items]
    return [shown_of(item, config, where) for item in items]
