"""Every submitted sample checked against the published split itself, not only against itself.

``checks`` proves a run consistent: its figures follow from its samples, its samples from
their own fields. A run relabelled against the dataset (each ``answer`` set to the ``prediction``,
condition kinds swapped, ``types`` changed, results.json recomputed) is consistent too. So each
sample is compared with the published item of the same id: answer letter, types, class name, the
conditions' attributes and kinds in the order the evaluator writes them (core then spurious, in
dataset order), and each condition's prompt and continuation as the recorded templates render
them (the part of a prompt the chat template adds cannot be re-rendered without the model: the
rendered user text must appear in it and it must end with the assistant prefix). In ``generate``
mode the prediction must be what the answer parser reads from ``raw_output``, and so must each
rotation's (against the item's options rotated by its shift) and the blind answer's. In an
interventions run each sample's entries are the run's names in order, ``cf:*`` expanded to the
counterfactuals the published item ships (names and targets, read without their images).

The published split is read from ``$MMSPUBENCH_PUBLISHED_DATASET`` (a local copy of the published
revision: a built folder or raw release; set on the Space or offline), else from the Hub at the
published revision.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, COUNTERFACTUALS_FIELD, TYPE_NAMES, label_name
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval import prompts
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import Answer, Condition, SampleResult
from mmspubench.eval.views import registry as views_registry
from mmspubench.eval.views.interventions.images import undecoded_rows

if TYPE_CHECKING:
    import datasets

DATASET_ENV = "MMSPUBENCH_PUBLISHED_DATASET"
"""Local folder holding the published revision of the dataset (else it is read from the Hub)."""
_COLUMNS = (
    "id",
    "answer",
    "class_name",
    "options",
    "core_attributes",
    "spurious_attributes",
    "spurious_types",
)
"""The columns the checks read (never the images)."""


@dataclass(frozen=True, slots=True)
class PublishedItem:
    """What a sample of a published item must agree with."""

    id: str
    """Item id."""
    answer: str
    """Correct option letter."""
    types: tuple[str, ...]
    """Canonical spurious-type names, in dataset order."""
    class_name: str
    """Ground-truth class name."""
    options: tuple[str, ...]
    """The four option texts (what the answer parser matches a generated answer against)."""
    conditions: tuple[tuple[str, str], ...]
    """``(attribute, kind)`` of every CGLA condition: core then spurious attributes, in dataset order."""
    counterfactuals: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``(name, targets)`` of each counterfactual image the item ships, in dataset order."""


def _item(row: Mapping[str, Any], where: str) -> PublishedItem:
    row_id = str(row["id"])
    core = tuple(str(a) for a in row["core_attributes"])
    spurious = tuple(str(a) for a in row["spurious_attributes"])
    return PublishedItem(
        id=row_id,
        answer=label_name(row["answer"], ANSWER_LETTERS, where, row_id, "answer"),
        types=tuple(
            label_name(t, TYPE_NAMES, where, row_id, "spurious_types") for t in row["spurious_types"]
        ),
        class_name=str(row["class_name"]),
        options=tuple(str(o) for o in row["options"]),
        conditions=tuple((a, "core") for a in core) + tuple((a, "spurious") for a in spurious),
    )


def _load_hub_revision(dataset_id: str, revision: str) -> datasets.Dataset:
    """The published split at ``revision``, read as ``eval --dataset`` reads it (built layout or raw
    release, the local Hub cache when offline)."""
    from mmspubench.dataset_builder.load import load_benchmark

    try:
        return load_benchmark(dataset_id, split="test", revision=revision)
    except MMSpuBenchError as err:
        raise MMSpuBenchError(
            f"cannot read the published split {dataset_id!r}@{revision[:12]} to check the samples "
            f"against ({err}); set {DATASET_ENV}=FOLDER to a local copy of the published revision"
        ) from None


@functools.lru_cache(maxsize=4)
def _split(dataset_id: str, revision: str, folder: str) -> datasets.Dataset:
    """The published split, read once per submit for its items and for the views' facts."""
    from mmspubench.dataset_builder.load import load_benchmark

    return load_benchmark(folder, split="test") if folder else _load_hub_revision(dataset_id, revision)


@functools.lru_cache(maxsize=4)
def _published(dataset_id: str, revision: str, folder: str) -> Mapping[str, PublishedItem]:
    where = folder or f"{dataset_id}@{revision[:12]}"
    ds = _split(dataset_id, revision, folder)
    items: dict[str, PublishedItem] = {}
    for row in ds.select_columns(list(_COLUMNS)).to_list():
        item = _item(row, where)
        if item.id in items:
            raise record_error(where, item.id, "id", "appears more than once in the published split")
        items[item.id] = item
    if COUNTERFACTUALS_FIELD in ds.column_names:  # names and targets only, never the images
        for row in undecoded_rows(ds, ["id", COUNTERFACTUALS_FIELD], len(ds)):
            shipped = tuple(
                (
                    str(c["name"]),
                    tuple(
                        label_name(t, TYPE_NAMES, where, str(row["id"]), COUNTERFACTUALS_FIELD)
                        for t in c["targets"]
                    ),
                )
                for c in row[COUNTERFACTUALS_FIELD] or ()
            )
            items[str(row["id"])] = replace(items[str(row["id"])], counterfactuals=shipped)
    return MappingProxyType(items)


def published_facts(dataset_id: str, revision: str, config: RunConfig) -> dict[str, Mapping[str, Any]]:
    """Per view of the run that reads more of the published split than its items' fields (its
    ``published`` hook: the interventions' image digests), what it reads, by item id."""
    views = [v for v in views_registry.in_run(config) if v.published is not None]
    if not views:
        return {}
    folder = os.environ.get(DATASET_ENV, "").strip()
    ds = _split(dataset_id, revision, folder)
    where = folder or f"{dataset_id}@{revision[:12]}"
    return {v.name: v.published(ds, config, where) for v in views if v.published is not None}


def published_items(dataset_id: str, revision: str) -> Mapping[str, PublishedItem]:
    """The published split's items by id: ``$MMSPUBENCH_PUBLISHED_DATASET``, else the Hub at ``revision``."""
    return _published(dataset_id, revision, os.environ.get(DATASET_ENV, "").strip())


def check_prompt_templates(config: RunConfig, where: str) -> None:
    """The recorded templates are this package's templates of the version they name."""
    recorded = config.prompts if isinstance(config.prompts, Mapping) else {}
    version = recorded.get("version")
    if version != prompts.PROMPT_VERSION:
        raise MMSpuBenchError(
            f"{where}: field 'config.prompts.version': {version!r}; this package checks prompt version "
            f"{prompts.PROMPT_VERSION!r} only"
        )
    expected = prompts.prompt_spec(config.prompt_variant, config.cgla_prompt_variant)
    for section in sorted(set(expected) | set(recorded)):
        if recorded.get(section) != expected.get(section):
            raise MMSpuBenchError(
                f"{where}: field 'config.prompts.{section}' differs from the version-{version} templates"
            )


def _prompt_fault(condition: Condition, cgla_variant: str = prompts.STANDARD) -> str | None:
    """Why ``condition.prompt`` is not g(attribute) rendered from the templates, or ``None``."""
    from mmspubench.eval.backends.openai.client import render_messages

    prompt = prompts.cgla_prompt(condition.attribute, cgla_variant)
    text = condition.prompt
    if text.startswith("[{"):  # an API backend's context: the chat messages as JSON, compared exactly
        try:
            same = json.loads(text) == json.loads(render_messages(prompt))
        except ValueError:
            same = False
        return None if same else "is not the CGLA messages of its attribute"
    prefix = prompt.assistant_prefix
    if not text.endswith(prefix) or prompt.user_text not in text[: len(text) - len(prefix)]:
        return f"does not hold the CGLA text of attribute {condition.attribute!r} followed by {prefix!r}"
    return None


def _check_conditions(sample: SampleResult, item: PublishedItem, config: RunConfig, where: str) -> None:
    got = [(c.attribute, c.kind) for c in sample.conditions]
    if len(got) != len(item.conditions):
        raise record_error(
            where,
            sample.id,
            "conditions",
            f"{len(got)} conditions; the published item has {len(item.conditions)} attributes",
        )
    continuation = prompts.cgla_continuation(item.class_name)
    for i, (condition, expected) in enumerate(zip(sample.conditions, item.conditions, strict=True)):
        field = f"conditions[{i}]"
        if (condition.attribute, condition.kind) != expected:
            raise record_error(
                where,
                sample.id,
                field,
                f"({condition.attribute!r}, {condition.kind!r}) but the published item's is {expected!r}",
            )
        if condition.continuation != continuation:
            raise record_error(
                where,
                sample.id,
                f"{field}.continuation",
                f"{condition.continuation!r}; expected {continuation!r}",
            )
        fault = _prompt_fault(condition, config.cgla_prompt_variant)
        if fault:
            raise record_error(where, sample.id, f"{field}.prompt", fault)


def _readings(
    sample: SampleResult, item: PublishedItem, published: bool
) -> list[tuple[str, str, SampleResult | Answer, tuple[str, ...]]]:
    """``(field, label, answer, options as shown)`` of every answer of ``sample``: the published
    order's (when ``published``: the run asked it), each rotation's (the item's options rotated by
    its shift), the blind one's and each intervention's (the published order)."""
    from mmspubench.eval.views.confounds.metrics import rotated_options

    out: list[tuple[str, str, SampleResult | Answer, tuple[str, ...]]] = (
        [("", "", sample, item.options)] if published else []
    )
    for r in sample.rotations or ():
        shown = rotated_options(item.options, r.rotation)
        out.append(("rotations.", f"rotation {r.rotation}: ", r.reply, shown))
    if sample.blind is not None:
        out.append(("blind.", "", sample.blind, item.options))
    for e in sample.interventions or ():
        out.append(("interventions.", f"{e.name}: ", e.reply, item.options))
    return out


def _check_prediction(
    sample: SampleResult, item: PublishedItem, config: RunConfig, where: str, style: str
) -> None:
    """In generate mode every answer (published, rotated, blind, intervened) is what its raw output
    reads as against this item's options as shown: split again by the run's reasoning ``style``,
    then read by the recorded path (:mod:`mmspubench.eval.replies.rederive`), whether it reads as
    another letter or as none."""
    from mmspubench.eval.records import reading_of
    from mmspubench.eval.replies.rederive import rederive_fault

    if config.answer_mode != "generate":
        return
    final = prompts.variant(config.prompt_variant).final_answer
    judged = getattr(config, "extract", "parser") == "judge"
    # The views' answers are checked even where results.json's config names no accuracy: that
    # config is read back without eval's option checks, and a view's answer is a figure of its own.
    for prefix, label, answer, options in _readings(sample, item, "accuracy" in config.metrics):
        reading = reading_of(answer)
        if answer.raw_output is None or reading is None:
            raise record_error(
                where, sample.id, f"{prefix}raw_output", f"{label}missing in a generate-mode run"
            )
        fault = rederive_fault(answer.prediction, answer.raw_output, reading, options, final, style, judged)
        if fault is not None:
            shown = "published options" if options == item.options else "options as rotated"
            raise record_error(
                where, sample.id, f"{prefix}{fault[0]}", f"{label}{fault[1]} against the {shown}"
            )


def _check_item(
    sample: SampleResult,
    item: PublishedItem,
    config: RunConfig,
    where: str,
    facts: Mapping[str, Mapping[str, Any]],
    style: str,
) -> None:
    fields = (
        ("answer", sample.answer, item.answer),
        ("types", list(sample.types), list(item.types)),
        ("class_name", sample.class_name, item.class_name),
    )
    for field, got, expected in fields:
        if got != expected:
            raise record_error(where, sample.id, field, f"{got!r} but the published item has {expected!r}")
    _check_prediction(sample, item, config, where, style)
    for view in views_registry.in_run(config):
        if view.against_item is None:
            continue
        found = view.against_item(sample, item, facts.get(view.name, {}).get(sample.id), config)
        if found is not None:
            raise record_error(where, sample.id, *found)
    if "cgla" in config.metrics:
        _check_conditions(sample, item, config, where)


def check_against_dataset(
    samples: Sequence[SampleResult],
    items: Mapping[str, PublishedItem],
    config: RunConfig,
    where: str,
    facts: Mapping[str, Mapping[str, Any]] | None = None,
    style: str = "none",
) -> None:
    """Every sample is a record of a published item and agrees with it (and with what the views
    read of the split, ``facts``: :func:`published_facts`; ``style``: the run's reasoning style,
    results.json ``model.reasoning_style``); raise on the first that does not."""
    facts = facts or {}
    for sample in samples:
        item = items.get(sample.id)
        if item is None:
            raise record_error(where, sample.id, "id", "not an item of the published split")
        _check_item(sample, item, config, where, facts, style)
    if len(samples) != len(items):
        raise MMSpuBenchError(f"{where}: {len(samples)} samples; the published split has {len(items)} items")
