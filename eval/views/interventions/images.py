"""What the interventions view shows: each item's image changed by each intervention of the run.

A built-in intervention transforms the item's image (:func:`mmspubench.eval.interventions.apply`,
made once per image and intervention, cached by the source's digest); ``cf:NAME`` shows the
dataset's own counterfactual image of that name. The question, the options and their order stay
the published ones.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.orientation import Look, look
from mmspubench.dataset_builder.schema import COUNTERFACTUALS_FIELD, TYPE_NAMES, Item, label_name
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval import interventions
from mmspubench.eval.data import undecoded_rows
from mmspubench.eval.intervention_names import CF_NAME, CF_PREFIX, expected_names, uses_counterfactuals

if TYPE_CHECKING:
    import datasets
    from mmspubench.eval.config import RunConfig


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
    """A run asking ``cf:`` names needs a dataset whose records have counterfactuals, and every item
    of the run is checked before the model loads (a bad record met in a later chunk would leave a
    half-written run folder): each counterfactual named ``[a-z0-9-]+`` once, targeting some of the
    item's own types, its image the item image's size and mode, every ``cf:NAME`` asked shipped;
    with only ``cf:*`` asked, some item ships one."""
    if "interventions" not in config.metrics or not uses_counterfactuals(config.interventions):
        return
    if COUNTERFACTUALS_FIELD not in dataset.column_names:
        asked = next(n for n in config.interventions if n.startswith(CF_PREFIX))
        raise MMSpuBenchError(
            f"{where}: --interventions {asked} needs counterfactual images, but no record has the "
            f"{COUNTERFACTUALS_FIELD!r} field (make them with mmspubench synth --counterfactuals)"
        )
    n = len(dataset) if config.limit is None else min(config.limit, len(dataset))
    columns = ["id", "image", "spurious_types", COUNTERFACTUALS_FIELD]
    shipping = 0
    for row in undecoded_rows(dataset, columns, n):
        _check_row(row, config, where)
        shipping += bool(row[COUNTERFACTUALS_FIELD])
    if shipping == 0 and all(name.startswith(CF_PREFIX) for name in config.interventions):
        raise MMSpuBenchError(
            f"{where}: --interventions {','.join(config.interventions)}: none of the {n} items ships a "
            f"counterfactual (field {COUNTERFACTUALS_FIELD!r} is empty in every record)"
        )


def _look(stored: Any) -> Look:
    """Size as shown (the EXIF orientation applied, as eval shows it) and mode of a stored image,
    from its header only (the run's images were decoded once already: ``data.check_images``)."""
    from PIL import Image

    source = io.BytesIO(stored["bytes"]) if stored.get("bytes") is not None else stored["path"]
    with Image.open(source) as image:
        return look(image)


def _check_row(row: Mapping[str, Any], config: RunConfig, where: str) -> None:
    rid = str(row["id"])
    types = [label_name(t, TYPE_NAMES, where, rid, "spurious_types") for t in row["spurious_types"]]
    entries = row[COUNTERFACTUALS_FIELD] or []
    names = [str(e["name"]) for e in entries]
    item_look = None
    for position, entry in enumerate(entries):
        field = f"{COUNTERFACTUALS_FIELD}[{position}]"
        name = names[position]
        if not CF_NAME.fullmatch(name) or names.index(name) != position:
            why = "given twice" if CF_NAME.fullmatch(name) else "does not match [a-z0-9-]+"
            raise record_error(where, rid, f"{field}.name", f"name {name[:60]!r} {why}")
        targets = [label_name(t, TYPE_NAMES, where, rid, f"{field}.targets") for t in entry["targets"] or []]
        if not targets or any(t not in types for t in targets) or len(set(targets)) != len(targets):
            raise record_error(
                where,
                rid,
                f"{field}.targets",
                f"{targets} is not a non-empty subset of the item's types {types}, each once",
            )
        if entry["image"] is None:
            raise record_error(where, rid, f"{field}.image", "no image")
        item_look = item_look or _look(row["image"])
        own = _look(entry["image"])
        if not own.same(item_look):
            raise record_error(
                where, rid, f"{field}.image", f"image is {own}; expected the item image's {item_look}"
            )
    missing = expected_names(config.interventions, names)
    if isinstance(missing, str):
        raise record_error(where, rid, COUNTERFACTUALS_FIELD, missing)


def shown_of(item: Item, config: RunConfig, where: str) -> tuple[Shown, ...]:
    """The changed images of ``item`` in the run's order (``cf:*`` expanded to the item's own)."""
    return shown_under(item, config.interventions, where)


def shown_under(item: Item, asked: Sequence[str], where: str) -> tuple[Shown, ...]:
    """The changed images of ``item`` under the intervention names ``asked`` (checked ones), in order;
    a ``cf:NAME`` the item does not ship is one error line naming ``where``, the item and the field."""
    shipped = {c.name: c for c in item.counterfactuals}
    names = expected_names(asked, [c.name for c in item.counterfactuals])
    if isinstance(names, str):
        raise record_error(where, item.id, COUNTERFACTUALS_FIELD, names)
    out = []
    for name in names:
        if name.startswith(CF_PREFIX):
            cf = shipped[name[len(CF_PREFIX) :]]
            image = interventions.to_rgb(cf.image)  # a decoded record's image (never a path here)
            # check_dataset saw the stored records; an item built in memory (the Space) is seen here
            if image.size != item.pil_image.size:
                raise record_error(
                    where,
                    item.id,
                    f"{COUNTERFACTUALS_FIELD}.image",
                    f"{name}: image is "
                    f"{image.size[0]}x{image.size[1]}; expected the item image's "
                    f"{item.pil_image.size[0]}x{item.pil_image.size[1]}",
                )
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
