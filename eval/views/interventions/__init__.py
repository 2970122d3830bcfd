"""The ``interventions`` view: each item asked again with its image changed, the question kept.

``--interventions`` names the changes: the photometric built-ins (:mod:`mmspubench.eval.interventions`)
or a dataset's own counterfactual images (``cf:NAME``, ``cf:*``). The changed images are made once
per chunk (:func:`~mmspubench.eval.views.interventions.images.shown_per_item`) and asked in the same
call as the published question; with ``cgla`` the CGLA conditions are scored under each of them
too. The sample's ``interventions`` holds one entry per intervention (name, targets, the digest
of the pixels shown, the answer, and with CGLA its CGLs); its section the accuracy under each, the
paired change, the flip rate and the targeted contrast
(:mod:`~mmspubench.eval.views.interventions.record`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import data, metrics, records
from mmspubench.eval.asking import Ask, answer_of
from mmspubench.eval.intervention_names import check_names, entries_fault, expected_names
from mmspubench.eval.views.confounds import record as results_confounds
from mmspubench.eval.views.interventions import images as intervention_asks
from mmspubench.eval.views.interventions import record as results_interventions
from mmspubench.eval.views.interventions.images import Shown
from mmspubench.eval.views.plugin import Chunk, Part, Plot, View

if TYPE_CHECKING:
    import datasets
    from mmspubench.dataset_builder.schema import Item
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.records import SampleResult

PANEL_HEIGHT = 3.6
"""Inches of each intervention's panel of ``report --plot`` (a run of every built-in and the twin's
three counterfactuals draws seven)."""


def check(config: RunConfig) -> None:
    """``--interventions`` is the view's option; its names are checked where the option is read
    (:func:`~mmspubench.eval.intervention_names.check_names`) and again here."""
    if "interventions" not in config.metrics:
        if config.interventions:
            raise MMSpuBenchError(
                f"--interventions {','.join(config.interventions)} is used only with --metrics ...,interventions"
            )
        return
    check_names(config.interventions)


def check_dataset(dataset: datasets.Dataset, config: RunConfig, where: str) -> None:
    """The counterfactual records the run asks for, every one checked before the model loads."""
    intervention_asks.check_dataset(dataset, config, where)


def prepare(items: Sequence[Item], config: RunConfig) -> list[tuple[Shown, ...]]:
    """Each item's changed images, in the run's order."""
    return intervention_asks.shown_per_item(items, config, str(config.dataset))


def asks(items: Sequence[Item], config: RunConfig, state: Sequence[Sequence[Shown]]) -> list[Ask]:
    """Every item under each of its changed images, in the published option order."""
    return [
        Ask(item, tuple(item.options), s.image)
        for item, images in zip(items, state, strict=True)
        for s in images
    ]


def cgla_images(state: Sequence[Sequence[Shown]]) -> list[list[Any]]:
    """The images each item's CGLA conditions are scored under too."""
    return [[s.image for s in images] for images in state]


def _entry(
    shown: Shown,
    answer: records.Answer,
    conditions: tuple[records.Condition, ...] | None,
    cgls: Any,
    config: RunConfig,
) -> records.InterventionAnswer:
    value = None
    if cgls is not None and conditions is not None:
        value = metrics.cgla_min_of(cgls, [c.kind for c in conditions], config.core_reduction)
    return records.InterventionAnswer(
        shown.name,
        shown.targets,
        shown.digest,
        answer,
        cgls,
        value,
        None if value is None else metrics.cgla_acc(value),
    )


def take(chunk: Chunk, config: RunConfig) -> list[tuple[records.InterventionAnswer, ...]]:
    """Each item's entries: each changed image's answer and, with CGLA, its CGLs."""
    replies = iter(chunk.replies)
    out = []
    for item, images, conditions, cgls in zip(
        chunk.items, chunk.state, chunk.conditions, chunk.cgls, strict=True
    ):
        out.append(
            tuple(
                _entry(
                    s,
                    answer_of(next(replies), item.answer),
                    conditions,
                    None if cgls is None else cgls[k],
                    config,
                )
                for k, s in enumerate(images)
            )
        )
    return out


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``interventions`` (the records checked first)."""
    return results_interventions.section(ordered, config)


def published(dataset: datasets.Dataset, config: RunConfig, where: str) -> dict[str, dict[str, str]]:
    """Per item of the published split, the digest of each image eval shows it under the run's
    interventions (made as eval makes them); an item that does not ship a ``cf:NAME`` of the run
    gets what it ships (``against_item`` names the missing entry)."""
    results_interventions.check_config_names(config)
    out = {}
    for item in data.iter_items(dataset, data.item_ids(dataset, None), where):
        names = expected_names(config.interventions, [c.name for c in item.counterfactuals])
        shown = () if isinstance(names, str) else intervention_asks.shown_under(item, names, where)
        out[item.id] = {s.name: s.digest for s in shown}
    return out


def against_item(sample: SampleResult, item: Any, digests: Any, config: RunConfig) -> tuple[str, str] | None:
    """The entries' names and targets against the published item's counterfactuals, and each
    entry's digest against the image eval shows (``digests``: from :func:`published`)."""
    if sample.interventions is None:
        return None
    got = [(e.name, e.targets) for e in sample.interventions]
    fault = entries_fault(got, config.interventions, item.counterfactuals)
    if fault is not None:
        return ("interventions", fault)
    for entry in sample.interventions:
        expected = None if digests is None else digests.get(entry.name)
        if expected is not None and entry.digest != expected:
            why = f"{entry.name}: {entry.digest[:16]}... is not the digest of the image eval shows ({expected[:16]}...)"
            return ("interventions.digest", why)
    return None


def check_record(
    entries: Sequence[records.InterventionAnswer], sample: SampleResult, config: RunConfig
) -> tuple[str, str] | None:
    """Each intervention's answer re-derived from the model's own output."""
    for entry in entries:
        label = f"{entry.name}: "
        fault = results_confounds.answer_fault(entry.reply, "interventions", label, config.answer_mode)
        if fault:
            return fault
    return None


def tables(runs: Sequence[Mapping[str, Any]], model: Any, cell: Any) -> list[str]:
    """The interventions tables of ``report`` (:mod:`mmspubench.eval.views.interventions.report`)."""
    from mmspubench.eval.views.interventions import report as report_interventions

    return report_interventions.tables(runs, model, cell)


def _series(
    results: Mapping[str, Any], samples: Sequence[SampleResult] | None, label: str, where: str
) -> Any:
    from mmspubench.eval.views.interventions import panels as plot_interventions

    return plot_interventions.intervention_series(results, label)


def _panels(series: Sequence[Any]) -> list[str]:
    from mmspubench.eval.views.interventions import panels as plot_interventions

    return plot_interventions.panels(series)


def _draw(ax: Any, panel: str, series: Sequence[Any]) -> None:
    from mmspubench.eval.views.interventions import panels as plot_interventions

    plot_interventions.draw(ax, panel, series)


def closing(section: Mapping[str, Any]) -> str | None:
    """Its part of ``eval``'s closing line: the accuracy and the change under each intervention."""
    shown = []
    for name in section.get("names") or []:
        entry = (section.get("by_intervention") or {}).get(name) or {}
        accuracy, change = entry.get("accuracy") or {}, entry.get("change") or {}
        if accuracy.get("overall") is not None and change.get("gain") is not None:
            shown.append(f"{name} {accuracy['overall']:.2f}% ({change['gain']:+.2f} pp)")
    return "under interventions: " + ", ".join(shown) if shown else None


VIEW = View(
    name="interventions",
    summary="the item asked again with its image changed (photometric or a counterfactual image)",
    check=check,
    check_dataset=check_dataset,
    prepare=prepare,
    asks=asks,
    cgla_images=cgla_images,
    take=take,
    part=Part("interventions", lambda value: [e.to_json() for e in value], records.read_interventions),
    check_record=check_record,
    section=section,
    kept_on_rerun=False,
    closing=closing,
    published=published,
    against_item=against_item,
    tables=tables,
    plot=Plot(series=_series, panels=_panels, draw=_draw, height=PANEL_HEIGHT),
)
