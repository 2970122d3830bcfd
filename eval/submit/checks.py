"""What ``submit`` (and the Space's Submit tab) checks beyond the aggregates.

Recomputing results.json from samples.jsonl is not enough: the samples themselves could be edited
or cut to a subset. So every sample is checked on its own (types, letters and condition kinds
against the schema; ``correct`` recomputed from ``prediction`` and ``answer``; in logprob mode the
prediction recomputed from the option scores; ``cgla_min``/``cgla_acc`` recomputed from the
conditions; each confound view's answer, rotations and blind alike, re-derived from its own option
scores, and rotation 0 the published answer itself), and the set of sample ids must be exactly the published split's, whose size and id
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
from mmspubench.eval.records import Answer, SampleResult
from mmspubench.eval.results_file import Results
from mmspubench.eval.views import registry as views_registry
from mmspubench.eval.views.metrics_confounds import ROTATIONS
from mmspubench.eval.views.results_confounds import letter_fault

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


def _logprob_fault(prediction: str | None, scores: tuple[float, ...] | None) -> tuple[str, str] | None:
    """``(field, why)`` when ``prediction`` is not the logprob answer of ``scores`` (their argmax,
    the first of tied letters, as ``eval`` picks it), else ``None``."""
    from mmspubench.eval.asking import argmax_letter

    if scores is None or len(scores) != len(ANSWER_LETTERS):
        return "option_scores", f"{0 if scores is None else len(scores)} scores; expected 4"
    best = argmax_letter(scores)
    if prediction != best:
        return "prediction", f"{prediction!r} is not the argmax {best!r} of option_scores"
    return None


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
        _logprob_fault(sample.prediction, sample.option_scores) if config.answer_mode == "logprob" else None
    )
    if fault:
        raise record_error(where, sample.id, *fault)


def _check_view_answer(
    sample: SampleResult, field: str, label: str, answer: Answer, mode: str, where: str
) -> None:
    """One view's answer follows from what the model produced, as the published answer does:
    in logprob mode its four option scores (the argmax), in generate mode its raw output (the
    parser's reading, checked against the published options by ``published``)."""
    fault = letter_fault(answer)
    if fault:
        raise record_error(where, sample.id, f"{field}.prediction", f"{label}{fault}")
    # Each mode records one kind of output: the scores (logprob) or the generated text.
    kept, other = ("option_scores", "raw_output") if mode == "logprob" else ("raw_output", "option_scores")
    if getattr(answer, kept) is None:
        raise record_error(where, sample.id, f"{field}.{kept}", f"{label}missing in a {mode}-mode run")
    if getattr(answer, other) is not None:
        raise record_error(where, sample.id, f"{field}.{other}", f"{label}set in a {mode}-mode run")
    wrong = _logprob_fault(answer.prediction, answer.option_scores) if mode == "logprob" else None
    if wrong:
        raise record_error(where, sample.id, f"{field}.{wrong[0]}", f"{label}{wrong[1]}")


def _check_views(sample: SampleResult, config: RunConfig, where: str) -> None:
    """The views' records: present exactly in the runs that asked for them, every confound answer
    re-derived from the model's own output, and rotation 0 the published answer itself (the
    evaluator records the same reply twice, so a rotation set taken from another item, or edited,
    no longer matches)."""
    for view in views_registry.VIEWS.values():  # each view's part: present exactly when it ran
        if view.part is None:
            continue
        asked, present = view.name in config.metrics, sample.part(view.part.key) is not None
        if asked != present:
            why = (
                f"missing in a {view.name} run" if asked else f"set, but the run did not compute {view.name}"
            )
            raise record_error(where, sample.id, view.part.key, why)
    if sample.rotations is not None:
        shifts = [r.rotation for r in sample.rotations]
        if tuple(shifts) != ROTATIONS:
            raise record_error(
                where, sample.id, "rotations", f"shifts {shifts}; expected {list(ROTATIONS)} in order"
            )
        for r in sample.rotations:
            _check_view_answer(
                sample, "rotations", f"rotation {r.rotation}: ", r.reply, config.answer_mode, where
            )
        first = sample.rotations[0].reply
        published = (sample.prediction, sample.raw_output, sample.option_scores)
        if (first.prediction, first.raw_output, first.option_scores) != published:
            raise record_error(
                where,
                sample.id,
                "rotations",
                "rotation 0 is not the published answer (prediction, raw_output, option_scores)",
            )
    if sample.blind is not None:
        _check_view_answer(sample, "blind", "", sample.blind, config.answer_mode, where)
    for entry in sample.interventions or ():
        _check_view_answer(sample, "interventions", f"{entry.name}: ", entry.reply, config.answer_mode, where)


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
