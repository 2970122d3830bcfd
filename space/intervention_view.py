"""Explore's interventions: an item's image beside its intervened and counterfactual images, with a
results run's answer under each.

A built-in intervention's image is made here by the evaluator's own transform
(:func:`mmspubench.eval.interventions.apply` on the item's image) and its digest compared with the
one the run recorded for the item: when they differ (the run read another revision of the image,
or its record was edited) the page says so under the image, never showing a picture as the one the
model saw when it is not. A counterfactual image is the dataset record's own (``counterfactuals``),
checked the same way; one the run did not ask is shown too, saying so. Plain functions; every text
of a record escaped, captions are plain text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, Item
from mmspubench.eval import interventions
from mmspubench.eval.intervention_names import CF_PREFIX
from mmspubench.markup import code_span

if TYPE_CHECKING:
    from PIL.Image import Image

Panel = tuple["Image", str]
"""One picture of the gallery and its caption."""
NAME_CHARS = 60
"""Most characters of a recorded name repeated on the page (a record's text, cut)."""
MAX_PANELS = 40
"""Most pictures of the gallery (a run asks at most 32 interventions; each is a picture sent to the
visitor's browser, so an item shipping hundreds of counterfactuals is cut, and the page says so)."""


def answer_text(answer: Any) -> str:
    """``B (wrong)``: the letter a run's answer object chose and whether it was right."""
    if not isinstance(answer, Mapping):
        return "no answer recorded"
    letter = answer.get("prediction")
    verdict = "right" if answer.get("correct") is True else "wrong"
    if not (isinstance(letter, str) and letter in ANSWER_LETTERS):
        return f"unparsed ({verdict})"
    return f"{letter} ({verdict})"


def _image_of(item: Item, name: str) -> tuple[Image, str] | None:
    """The picture ``name`` shows of ``item`` and its digest; ``None`` when the page cannot make it."""
    if name in interventions.INTERVENTIONS:
        return interventions.apply(name, item.pil_image)
    if name.startswith(CF_PREFIX):
        for cf in item.counterfactuals:
            if CF_PREFIX + cf.name == name and not isinstance(cf.image, Path):
                image = interventions.to_rgb(cf.image)  # as the evaluator shows it
                return image, interventions.pixel_digest(image)
    return None


def _entries(record: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    value = record.get("interventions") if record is not None else None
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def panels(item: Item, record: Mapping[str, Any] | None) -> tuple[list[Panel], list[str]]:
    """The gallery (the published image first, then each of the run's interventions in its order,
    then the item's counterfactuals the run did not ask) and the notes (Markdown lines) on what
    the page could not show or found to differ."""
    published = f"published: {answer_text(record)}" if record is not None else "published"
    gallery: list[Panel] = [(item.pil_image, published)]
    notes: list[str] = []
    shown: set[str] = set()
    for entry in _entries(record):
        name = str(entry.get("name"))[:NAME_CHARS]
        made = _image_of(item, name)
        if made is None:
            notes.append(
                f"{code_span(name)}: no built-in intervention of that name, and the item ships no such "
                "counterfactual: not shown"
            )
            continue
        image, digest = made
        caption = f"{name}: {answer_text(entry)}"
        recorded = entry.get("digest")
        if recorded != digest:
            caption += " · not the image the run saw"
            notes.append(
                f"{code_span(name)}: the image shown (digest {code_span(digest[:16])}) is not the one the "
                f"run recorded ({code_span(str(recorded)[:16])}): the run saw other pixels (another "
                "revision of the dataset, or an edited record)"
            )
        gallery.append((image, caption))
        shown.add(name)
    for cf in item.counterfactuals:
        name = CF_PREFIX + cf.name
        if name not in shown:
            made = _image_of(item, name)
            if made is not None:
                gallery.append((made[0], f"{name}: not asked" if record is not None else name))
    if len(gallery) > MAX_PANELS:
        notes.append(f"{len(gallery) - MAX_PANELS} more image(s) not shown: the page shows {MAX_PANELS}")
        gallery = gallery[:MAX_PANELS]
    return gallery, notes


def reading(item: Item, record: Mapping[str, Any] | None, run_label: str | None, notes: Sequence[str]) -> str:
    """The text under the gallery: where the answers come from and what differs."""
    if record is None or run_label is None:
        more = "".join(f"\n\n- {line}" for line in notes)
        text = (
            "No results run asked this item under image interventions "
            "(`mmspubench eval --metrics accuracy,interventions`)."
        )
        if item.counterfactuals:
            text += " The dataset's counterfactual images of the item are shown, without answers."
        return text + more
    asked = len(_entries(record))
    text = (
        f"From results run {code_span(run_label)}: the item asked under {asked} intervention(s), its "
        "answer (letter, right or wrong) under each picture; the question and options stay the published ones."
    )
    if notes:
        text += "\n\n" + "\n".join(f"- {line}" for line in notes)
    return text
