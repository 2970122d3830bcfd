"""The interventions view of the Inspect task: ``-T interventions=grayscale,blur`` (``cf:NAME``, ``cf:*``).

Each item is also asked under each intervention, after its other views: one sample per changed
image, id ``<item id>/<name>`` (``cf:*`` expanded to the item's own ``cf:NAME`` entries), holding
the published question and options in the published order and the changed image as a PNG
``data:`` URI of exactly the pixels ``mmspubench eval --metrics accuracy,interventions`` shows
(``ingest.interventions.shown_of``: a built-in transform, or the dataset's counterfactual). The
sample's metadata names the item (``item_id``), ``view`` ``intervention``, the ``intervention``,
its ``targets`` and the shown image's ``digest``.

The metric pairs each changed answer with the item's published one and computes, per intervention,
eval's point figures with eval's own functions (``eval.views.interventions.arithmetic``): accuracy under it,
the paired change, the flip rate and the targeted contrast.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentImage, ContentText
from inspect_ai.scorer import Metric, SampleScore, metric, value_to_float
from mmspubench.dataset_builder.schema import COUNTERFACTUALS_FIELD
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics, prompts
from mmspubench.eval.intervention_names import CF_PREFIX, uses_counterfactuals
from mmspubench.eval.views.interventions import arithmetic as metrics_interventions
from mmspubench.integrations.ingest.interventions import INTERVENTION, INTERVENTION_FIGURES, shown_of
from mmspubench.integrations.ingest.run import IMAGE
from mmspubench.integrations.items import Split, SplitItem

FIGURES = INTERVENTION_FIGURES
"""The figures reported per intervention, as ``<name>_<figure>`` (``grayscale_change``)."""


def sample_id(item_id: str, name: str) -> str:
    """The sample id of an item asked under intervention ``name`` (``cf:*`` already expanded)."""
    return f"{item_id}/{name}"


def png_uri(image: Any) -> str:
    """``image`` (RGB) as a PNG ``data:`` URI: lossless, so a reader decodes the very pixels shown."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def check_split(loaded: Split, names: Sequence[str], where: str) -> None:
    """A run asking ``cf:`` names needs items that ship counterfactuals (as ``eval``'s check)."""
    if uses_counterfactuals(names) and not any(s.item.counterfactuals for s in loaded.items):
        asked = next(n for n in names if n.startswith(CF_PREFIX))
        raise MMSpuBenchError(
            f"{where}: -T interventions={asked}: needs counterfactual images, but no record has the "
            f"{COUNTERFACTUALS_FIELD!r} field (make them with mmspubench synth --counterfactuals)"
        )


def intervention_samples(
    split_item: SplitItem, variant_name: str, names: Sequence[str], where: str
) -> list[Sample]:
    """The item asked under each intervention, in the run's order (a ``cf:NAME`` the item does not
    ship is one error line naming the record)."""
    item = split_item.item
    text = prompts.mcq_prompt(
        item.question, item.options, "generate", variant_name, core_attributes=item.core_attributes
    ).user_text
    system = prompts.variant(variant_name).system
    out = []
    for shown in shown_of(names, split_item, where):
        metadata = {"types": list(item.spurious_types), "class_name": item.class_name, "item_id": item.id}
        metadata.update({"view": INTERVENTION, "rotation": 0, "answer": item.answer})
        metadata.update({"intervention": shown.name, "targets": list(shown.targets), "digest": shown.digest})
        user = ChatMessageUser(content=[ContentImage(image=png_uri(shown.image)), ContentText(text=text)])
        out.append(
            Sample(
                id=sample_id(item.id, shown.name),
                input=[ChatMessageSystem(content=system), user],
                choices=list(item.options),
                target=item.answer,
                metadata=metadata,
            )
        )
    return out


def _meta(score: SampleScore) -> dict[str, Any]:
    return dict(score.sample_metadata or {})


def _pairs(scores: Sequence[SampleScore]) -> dict[str, list[tuple[SampleScore, SampleScore]]]:
    """(published, changed) scores per intervention, in the order the names first appear."""
    published: dict[str, SampleScore] = {}
    changed: dict[str, list[tuple[str, SampleScore]]] = {}
    for score in scores:
        meta = _meta(score)
        view, item_id = meta.get("view", IMAGE), str(meta.get("item_id"))
        if view == IMAGE and meta.get("rotation", 0) == 0:
            published[item_id] = score
        elif view == INTERVENTION:
            changed.setdefault(str(meta.get("intervention")), []).append((item_id, score))
    return {name: [(published[i], s) for i, s in asked if i in published] for name, asked in changed.items()}


def _correct(score: SampleScore) -> bool:
    return value_to_float()(score.score.value) == 1.0


def _prediction(score: SampleScore) -> str | None:
    return str(score.score.answer) if score.score.answer else None


def figures_of(pairs: Sequence[tuple[SampleScore, SampleScore]]) -> dict[str, float]:
    """One intervention's figures (percent, points) over its (published, changed) score pairs."""
    types = [tuple(_meta(p).get("types") or ()) for p, _ in pairs]
    vanilla = [_correct(p) for p, _ in pairs]
    changed = [_correct(c) for _, c in pairs]
    targeted = [
        bool(set(t) & set(_meta(c).get("targets") or ())) for t, (_, c) in zip(types, pairs, strict=True)
    ]
    scored = [metrics.Scored(t, 1.0 if ok else 0.0) for t, ok in zip(types, changed, strict=True)]
    flip, _ = metrics_interventions.flip_rates(
        types, [_prediction(p) for p, _ in pairs], [_prediction(c) for _, c in pairs]
    )
    out = {
        "accuracy": metrics.accuracy_summary(scored, 0, 0)["overall"],
        "change": metrics_interventions.paired_change(types, vanilla, changed, 0)["gain"],
        "flip_rate": flip,
    }
    contrast = metrics_interventions.targeted_contrast(targeted, vanilla, changed, 0)
    if contrast is not None:  # no item of the targeted types, or none of the others: no contrast
        out["targeted_contrast"] = contrast["value"]
    return out


@metric
def intervention_figures() -> Metric:
    """Per intervention ``NAME``: ``NAME_accuracy`` (percent right under it), ``NAME_change``
    (that minus the published accuracy, points, paired), ``NAME_flip_rate`` (percent of items
    whose answer changes) and ``NAME_targeted_contrast`` (the change on its target types' items
    minus the change on the others; left out when either group is empty), over the items with both
    answers scored (results.json ``interventions.by_intervention``'s point figures)."""

    def compute(scores: list[SampleScore]) -> Any:
        out: dict[str, float] = {}
        for name, pairs in _pairs(scores).items():
            if pairs:
                out.update({f"{name}_{k}": v for k, v in figures_of(pairs).items()})
        return out

    return compute
