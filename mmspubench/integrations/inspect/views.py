"""The confound views of the Inspect task: ``-T circular=true`` and ``-T blind=true``.

Each item becomes a group of samples, in this order: the published order (sample id = item id),
then with ``circular`` its rotations 1-3 (``<id>/rotation-<k>``), then with ``blind`` the prompt
without the image (``<id>/blind``; with ``-T blind_image=grey`` a mid-grey image of the item
image's size, as ``mmspubench eval --blind-image grey``). Rotation ``k`` is ``mmspubench eval``'s
own (``eval.views.confounds.metrics.rotated_options``/``rotated_answer``): the option of published
position ``j`` is shown at ``(j + k) mod 4`` and the gold letter moves with it. Every sample of a
group carries the item in its metadata (``item_id``, ``view``, ``rotation``, ``answer``).

The metrics group the samples by item and compute the figures with ``mmspubench eval``'s own
functions (``circular_summary``, ``blind_summary``): an item is correct under the circular rule
only when all four rotations are.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, Content, ContentImage, ContentText
from inspect_ai.scorer import Metric, SampleScore, metric, value_to_float
from mmspubench.eval import prompts
from mmspubench.eval.views.confounds import metrics as metrics_confounds
from mmspubench.integrations.ingest.run import BLIND, IMAGE
from mmspubench.integrations.items import SplitItem

__all__ = ["BLIND", "IMAGE", "blind_figures", "circular_figures", "item_samples", "sample_id"]


def sample_id(item_id: str, view: str, rotation: int) -> str:
    """The sample id of one view of an item (the published order keeps the item id)."""
    if view == BLIND:
        return f"{item_id}/blind"
    return item_id if rotation == 0 else f"{item_id}/rotation-{rotation}"


def grey_uri(split_item: SplitItem) -> str:
    """``mmspubench eval --blind-image grey``'s image of the item (``eval.views.blind.blind_image``), as PNG."""
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.views.blind import blind_image

    image = blind_image(split_item.item, RunConfig(metrics=("accuracy", BLIND), blind_image="grey"))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def view_sample(
    split_item: SplitItem, variant_name: str, view: str, rotation: int, blind_image: str
) -> Sample:
    """One view of one item: the variant's system turn, then the image (none in the blind view
    with ``blind_image`` ``none``) and the multiple-choice text of the options as shown."""
    item = split_item.item
    options = metrics_confounds.rotated_options(item.options, rotation)
    text = prompts.mcq_prompt(
        item.question, options, "generate", variant_name, core_attributes=item.core_attributes
    ).user_text
    content: list[Content] = [ContentText(text=text)]
    if view == IMAGE:
        content.insert(0, ContentImage(image=split_item.data_uri))
    elif blind_image == "grey":
        content.insert(0, ContentImage(image=grey_uri(split_item)))
    answer = metrics_confounds.rotated_answer(item.answer, rotation)
    metadata = {"types": list(item.spurious_types), "class_name": item.class_name, "item_id": item.id}
    metadata.update({"view": view, "rotation": rotation, "answer": answer})
    return Sample(
        id=sample_id(item.id, view, rotation),
        input=[
            ChatMessageSystem(content=prompts.variant(variant_name).system),
            ChatMessageUser(content=content),
        ],
        choices=list(options),
        target=answer,
        metadata=metadata,
    )


def item_samples(
    split_item: SplitItem, variant_name: str, circular: bool, blind: bool, blind_image: str
) -> list[Sample]:
    """The group of one item: published order, rotations 1-3 (``circular``), the blind view (``blind``)."""
    rotations = metrics_confounds.ROTATIONS if circular else (0,)
    out = [view_sample(split_item, variant_name, IMAGE, k, blind_image) for k in rotations]
    if blind:
        out.append(view_sample(split_item, variant_name, BLIND, 0, blind_image))
    return out


def _meta(score: SampleScore) -> dict[str, Any]:
    return dict(score.sample_metadata or {})


def is_published(score: SampleScore) -> bool:
    """The sample is an item's published order (a sample of a task without views is)."""
    meta = _meta(score)
    return meta.get("view", IMAGE) == IMAGE and meta.get("rotation", 0) == 0


def _prediction(score: SampleScore) -> str | None:
    return str(score.score.answer) if score.score.answer else None


def _groups(scores: Sequence[SampleScore]) -> dict[str, dict[tuple[str, int], SampleScore]]:
    groups: dict[str, dict[tuple[str, int], SampleScore]] = {}
    for score in scores:
        meta = _meta(score)
        key = (str(meta.get("view", IMAGE)), int(meta.get("rotation", 0)))
        groups.setdefault(str(meta.get("item_id")), {})[key] = score
    return groups


def _correct(score: SampleScore) -> bool:
    return value_to_float()(score.score.value) == 1.0


@metric
def circular_figures() -> Metric:
    """``circular_accuracy`` (all four rotations right), ``circular_average``, ``vanilla_accuracy``,
    ``rotation_accuracy``, ``consistency`` (percent) and ``position_bias_p``, over the items whose
    four rotations were all scored (``eval.views.confounds.metrics.circular_summary``)."""

    def compute(scores: list[SampleScore]) -> Any:
        types, rotations = [], []
        for group in _groups(scores).values():
            if not all((IMAGE, k) in group for k in metrics_confounds.ROTATIONS):
                continue
            first = group[(IMAGE, 0)]
            types.append(tuple(_meta(first).get("types") or ()))
            rotations.append(
                [
                    metrics_confounds.RotationAnswer(
                        k, str(_meta(group[(IMAGE, k)])["answer"]), _prediction(group[(IMAGE, k)])
                    )
                    for k in metrics_confounds.ROTATIONS
                ]
            )
        if not rotations:
            return {}
        summary = metrics_confounds.circular_summary(types, rotations, 0)
        names = ("vanilla_accuracy", "rotation_accuracy", "consistency", "position_bias_p")
        out = {"circular_accuracy": summary["accuracy"], "circular_average": summary["average"]}
        return {**out, **{n: summary[n] for n in names}}

    return compute


@metric
def blind_figures() -> Metric:
    """``blind_accuracy``, ``blind_average`` and ``blind_gain`` (percent, paired) over the items
    with both a published and a blind answer (``eval.views.confounds.metrics.blind_summary``)."""

    def compute(scores: list[SampleScore]) -> Any:
        ids, types, seen, unseen = [], [], [], []
        for item_id, group in _groups(scores).items():
            if (IMAGE, 0) not in group or (BLIND, 0) not in group:
                continue
            ids.append(item_id)
            types.append(tuple(_meta(group[(IMAGE, 0)]).get("types") or ()))
            seen.append(_correct(group[(IMAGE, 0)]))
            unseen.append(_correct(group[(BLIND, 0)]))
        if not ids:
            return {}
        summary = metrics_confounds.blind_summary(ids, types, seen, unseen, 0, "none")
        return {
            "blind_accuracy": summary["accuracy"],
            "blind_average": summary["average"],
            "blind_gain": summary["gain"],
        }

    return compute
