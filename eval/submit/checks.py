"""What ``submit`` (and the Space's Submit tab) checks beyond the aggregates.

Recomputing results.json from samples.jsonl is not enough: the samples themselves could be edited
or cut to a subset. So every sample is checked on its own (types, letters and condition kinds
against the schema; ``correct`` recomputed from ``prediction`` and ``answer``; in logprob mode the
prediction recomputed from the option scores; ``cgla_min``/``cgla_acc`` recomputed from the
conditions; each view's part checked by its own view, ``View.check_record``: a confound answer
re-derived from its own option scores, rotation 0 the published answer itself), and the set of
sample ids must be exactly the published split's, whose size and id
digest the dataset card of the published revision declares (written by ``build``). Every sample
line must carry the run stamp that results.json's config, dataset and model give, so a config
edited after the run (a ceiling run relabelled ``standard``) is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS, MAX_ATTRIBUTES, MAX_TYPES, TYPE_NAMES
from mmspubench.dataset_builder.split_ids import CARD_KEY, ids_digest
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval import metrics
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results_file import Results
from mmspubench.eval.views import registry as views_registry
from mmspubench.eval.views.confounds.record import logprob_fault

SPLIT_ENV = "MMSPUBENCH_PUBLISHED_SPLIT"
"""``N:SHA256`` of the published test split (set on the Space, or offline); else read from the Hub card."""


def _check_types(sample: SampleResult, where: str) -> None:
    types = sample.types
    if not 1 <= len(types) <= MAX_TYPES or len(set(types)) != len(types):
        raise record_error(where, sample.id, "types", f"{list(types)}: expected 1 or 2 distinct type names")
    unknown = [t for t in types if t not in TYPE_NAMES]
    if unknown:
        raise record_error(
            where, sample.id, "types", f"unknown type {unknown[0]!r}; expected one of {TYPE_NAMES}"
        )
    if sample.answer not in ANSWER_LETTERS:
        raise record_error(where, sample.id, "answer", f"{sample.answer!r} is not one of A, B, C, D")


def _check_answer(sample: SampleResult, config: RunConfig, where: str) -> None:
    if "accuracy" not in config.metrics:
        if sample.correct is not None or sample.prediction is not None:
            raise record_error(where, sample.id, "correct", "set, but the run did not compute accuracy")
        return
    if sample.prediction is not None and sample.prediction not in ANSWER_LETTERS:
        raise record_error(where, sample.id, "prediction", f"{sample.prediction!r} is not A, B, C, D or null")
    if sample.correct is not (sample.prediction == sample.answer):
        raise record_error(
            where,
            sample.id,
            "correct",
            f"{sample.correct!r} but prediction {sample.prediction!r} and answer {sample.answer!r}",
        )
    fault = (
        logprob_fault(sample.prediction, sample.option_scores) if config.answer_mode == "logprob" else None
    )
    if fault:
        raise record_error(where, sample.id, *fault)


def _check_views(sample: SampleResult, config: RunConfig, where: str) -> None:
    """The views' parts: present exactly in the runs that asked for them, then each checked by its
    own view (``View.check_record``: a confound answer re-derived from the model's own output,
    rotation 0 the published answer itself, ...)."""
    for view in views_registry.VIEWS.values():  # each view's part: present exactly when it ran
        if view.part is None:
            continue
        asked, present = view.name in config.metrics, sample.part(view.part.key) is not None
        if asked != present:
            why = (
                f"missing in a {view.name} run" if asked else f"set, but the run did not compute {view.name}"
            )
            raise record_error(where, sample.id, view.part.key, why)
    for view in views_registry.VIEWS.values():
        part = None if view.part is None else sample.part(view.part.key)
        fault = None if part is None or view.check_record is None else view.check_record(part, sample, config)
        if fault is not None:
            raise record_error(where, sample.id, *fault)


def _check_cgla(sample: SampleResult, config: RunConfig, where: str) -> None:
    if "cgla" not in config.metrics:
        if sample.conditions or sample.cgla_min is not None or sample.cgla_acc is not None:
            raise record_error(where, sample.id, "conditions", "set, but the run did not compute CGLA")
        return
    core = [c.cgl for c in sample.conditions if c.kind == "core"]
    spurious = [c.cgl for c in sample.conditions if c.kind == "spurious"]
    for name, values in (("core", core), ("spurious", spurious)):
        if not 1 <= len(values) <= MAX_ATTRIBUTES:
            raise record_error(
                where,
                sample.id,
                "conditions",
                f"{len(values)} {name} conditions; expected 1 to {MAX_ATTRIBUTES}",
            )
    value = metrics.cgla_min(core, spurious, config.core_reduction)
    if sample.cgla_min is None or sample.cgla_min != value or sample.cgla_acc is not metrics.cgla_acc(value):
        raise record_error(
            where,
            sample.id,
            "cgla_min",
            f"{sample.cgla_min!r} (cgla_acc {sample.cgla_acc!r}) does not follow from its conditions "
            f"(expected {value!r} under core reduction {config.core_reduction!r})",
        )


def check_sample_consistency(samples: Sequence[SampleResult], config: RunConfig, where: str) -> None:
    """Every sample agrees with the schema and with itself; raise on the first that does not."""
    for sample in samples:
        _check_types(sample, where)
        _check_answer(sample, config, where)
        _check_views(sample, config, where)
        _check_cgla(sample, config, where)


def published_split(dataset_id: str, revision: str, split: str = "test") -> tuple[int, str]:
    """``(n, ids_sha256)`` of the published split: ``$MMSPUBENCH_PUBLISHED_SPLIT``, else the card on the Hub."""
    text = os.environ.get(SPLIT_ENV, "").strip()
    if text:
        n, _, digest = text.partition(":")
        if not n.isdigit() or len(digest) != 64:
            raise MMSpuBenchError(
                f"${SPLIT_ENV}={text!r}: expected N:SHA256 (the split's size and id digest)"
            )
        return int(n), digest
    return _card_split(dataset_id, revision, split)


def _card_split(dataset_id: str, revision: str, split: str) -> tuple[int, str]:
    from huggingface_hub import DatasetCard, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError
    from mmspubench.dataset_builder.load import network_errors
    from mmspubench.dataset_builder.split_digest import split_from_data

    hint = f"set {SPLIT_ENV}=N:SHA256 to check offline"
    try:
        path = hf_hub_download(dataset_id, "README.md", repo_type="dataset", revision=revision)
        card = DatasetCard.load(path)
    except EntryNotFoundError:  # no card (or none cached): the data at that revision tells
        return split_from_data(dataset_id, revision, split)
    except (ValueError, *network_errors()) as err:
        raise MMSpuBenchError(
            f"cannot read the split ids of {dataset_id!r}@{revision[:12]} from its card ({type(err).__name__}); {hint}"
        ) from None
    entry = (card.data.get(CARD_KEY) or {}).get(split)
    if entry is None:  # a card not written by `build` (the published raw release's)
        return split_from_data(dataset_id, revision, split)
    if not isinstance(entry, Mapping) or not isinstance(entry.get("n"), int) or not entry.get("sha256"):
        raise MMSpuBenchError(
            f"the card of {dataset_id!r}@{revision[:12]} declares a malformed {CARD_KEY}.{split}; {hint}"
        )
    return int(entry["n"]), str(entry["sha256"])


def check_split_ids(
    samples: Sequence[SampleResult], dataset: Mapping[str, Any], published: tuple[int, str], where: str
) -> None:
    """The sample ids are exactly the published split's (size and digest), and match what the run recorded."""
    ids = [s.id for s in samples]
    digest = ids_digest(ids)
    n, expected = published
    if len(ids) != n or digest != expected:
        raise MMSpuBenchError(
            f"{where}: the {len(ids)} sample ids are not the published split's {n} ids "
            f"(digest {digest[:12]} vs {expected[:12]}); submit a full run of the published split"
        )
    for key, value in (("split_n", n), ("ids_sha256", expected)):
        if key in dataset and dataset[key] != value:
            raise MMSpuBenchError(
                f"{where}: field 'dataset.{key}': {dataset[key]!r} is not the published {value!r}"
            )


def expected_stamp(results: Results | Mapping[str, Any], config: RunConfig) -> str:
    """The run stamp every sample of this results.json must carry: the digest of its config
    identity, its dataset (as the run pinned it) and its model identity (``eval.run_stamp``)."""
    from mmspubench.eval.run_stamp import results_stamp

    return results_stamp(results, config.identity())


def check_run_stamps(samples_path: Path, results: Results, config: RunConfig, where: str) -> None:
    """Every sample line carries the run stamp that results.json's config, dataset and model give.

    The stamp is written into each line when the sample is scored, so a results.json whose config
    was edited afterwards (a ceiling ``attribute-hint`` run relabelled ``standard``, another answer
    mode, another dataset or model) no longer agrees with its own samples.
    """
    from mmspubench.eval.run_stamp import STAMP_FIELD, foreign_stamp

    stamp = expected_stamp(results, config)
    foreign = foreign_stamp(samples_path, stamp, samples_path.name, complete_only=False)
    if foreign is not None:
        _, rid, found = foreign
        what = "carries no run stamp" if found is None else f"was scored by run {found!r}"
        raise MMSpuBenchError(
            f"{samples_path.name}: record {rid!r}: field {STAMP_FIELD!r}: {what}, not the run "
            f"{stamp!r} that {where}'s config, dataset and model describe (edited after the run?)"
        )
