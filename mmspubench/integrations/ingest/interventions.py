"""The interventions view of a harness run, for ingest: the images shown, their digests, the figures.

An intervened answer's image must be the one ``mmspubench eval`` shows for that item and
intervention (``eval.views.interventions.images.shown_of``); the image a log holds is decoded and compared
by its pixel digest. The figures a harness may record per intervention are results.json's
``interventions`` point figures under ``NAME_<figure>`` names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval.config import RunConfig
from mmspubench.eval.views.interventions import images as intervention_asks
from mmspubench.eval.views.interventions.images import Shown
from mmspubench.integrations.items import SplitItem
from mmspubench.redact import clean

INTERVENTION = "intervention"
"""The view asked with the item's image changed by an intervention (``-T interventions``)."""

INTERVENTION_FIGURES = ("accuracy", "change", "flip_rate", "targeted_contrast")
"""The figures a harness may record per intervention ``NAME``, as ``NAME_<figure>``."""


def intervention_figures(built: Mapping[str, Any]) -> dict[str, float]:
    """``NAME_accuracy``, ``NAME_change``, ``NAME_flip_rate`` and ``NAME_targeted_contrast`` (where
    there is one) of every intervention in results.json's ``interventions`` section."""
    out: dict[str, float] = {}
    for name, figures in ((built.get("interventions") or {}).get("by_intervention") or {}).items():
        out[f"{name}_accuracy"] = figures["accuracy"]["overall"]
        out[f"{name}_change"] = figures["change"]["gain"]
        out[f"{name}_flip_rate"] = figures["flip_rate"]
        if figures["targeted_contrast"] is not None:
            out[f"{name}_targeted_contrast"] = figures["targeted_contrast"]["value"]
    return out


def shown_of(names: Sequence[str], split_item: SplitItem, source: str) -> tuple[Shown, ...]:
    """The item's intervened images in the run's order, as ``mmspubench eval`` shows them (none
    without ``names``; a ``cf:NAME`` the item does not ship is one error line)."""
    if not names:
        return ()
    config = RunConfig(metrics=("accuracy", "interventions"), interventions=tuple(names))
    return intervention_asks.shown_of(split_item.item, config, source)


def check_shown(source: str, label: str, digest: str | None, shown: Shown) -> None:
    """The image a harness showed (``digest``; ``None``: not recorded) is the intervened one."""
    if digest is not None and digest != shown.digest:
        raise record_error(
            source,
            label,
            "input",
            f"the image shown (digest {digest[:12]}...) is not the item's {shown.name} image "
            f"(digest {shown.digest[:12]}...)",
        )


def shown_digest(sample: Any, source: str, label: str) -> str | None:
    """``pixel_digest`` of the RGB pixels of the prompt's one image (a ``data:`` URI), as the
    provider decodes it; the sample's metadata ``digest`` must name the same pixels. (A log keeps
    an image as an ``attachment://`` reference; it is resolved here, for this sample only.)"""
    import base64
    import binascii
    import io

    from inspect_ai.log import resolve_sample_attachments
    from inspect_ai.model import ChatMessageUser, ContentImage
    from mmspubench.eval.interventions import pixel_digest, to_rgb
    from PIL import Image, UnidentifiedImageError

    resolved = resolve_sample_attachments(sample)  # a resolved copy; the log is left as read
    users = (
        [m for m in resolved.input if isinstance(m, ChatMessageUser)]
        if isinstance(resolved.input, list)
        else []
    )
    parts = [] if len(users) != 1 or isinstance(users[0].content, str) else users[0].content
    images = [p.image for p in parts if isinstance(p, ContentImage)]
    if len(images) != 1:
        return None  # the image count is checked with the view (ingest._check_images)
    head, _, body = str(images[0]).partition(",")
    try:
        if not (head.startswith("data:image/") and head.endswith(";base64")):
            raise ValueError("not a base64 data: URI")
        with Image.open(io.BytesIO(base64.b64decode(body, validate=True))) as image:
            digest = pixel_digest(to_rgb(image))
    except (ValueError, binascii.Error, OSError, UnidentifiedImageError, Image.DecompressionBombError):
        raise record_error(source, label, "input", "the image is not a readable base64 data: URI") from None
    claimed = (sample.metadata or {}).get("digest")
    if claimed != digest:
        raise record_error(
            source,
            label,
            "metadata",
            f"digest {clean(str(claimed))[:70]!r} is not the image shown ({digest})",
        )
    return digest


def task_interventions(args: Mapping[str, Any], source: str) -> tuple[str, ...]:
    """The interventions the task arguments asked, checked as the task checks them."""
    from mmspubench.integrations.inspect.args import check_interventions

    try:
        return check_interventions(args.get("interventions"))
    except MMSpuBenchError as err:
        raise MMSpuBenchError(f"{source}: task argument {clean(str(err))}") from None
