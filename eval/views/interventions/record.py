"""results.json's ``interventions`` section from samples.jsonl.

Every record is checked first (its entries are the run's interventions in order, ``cf:*`` expanded
to distinct ``cf:NAME`` entries; each answer a letter whose ``correct`` follows; a built-in's
targets its registry's; with CGLA, its CGLs one per condition and its ``cgla_min`` following from
them), then each intervention's figures are computed over the items asked under it
(:mod:`mmspubench.eval.views.interventions.arithmetic`). With the twin's counterfactuals, ``counterfactual_gaps``
holds the Backgrounds-Challenge-style gaps against the published item (``cue-broken``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import TYPE_ABBREV, TYPE_NAMES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics
from mmspubench.eval.intervention_names import CF_ALL, CF_NAME, CF_PREFIX, check_names
from mmspubench.eval.interventions import INTERVENTIONS
from mmspubench.eval.records import InterventionAnswer, SampleResult
from mmspubench.eval.views.confounds.record import letter_fault
from mmspubench.eval.views.interventions import arithmetic as metrics_interventions

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

DIGEST = re.compile(r"[0-9a-f]{64}")
"""A recorded image digest: SHA-256 in lower-case hex."""
GAPS = {"cf:cue-aligned": "aligned_minus_broken", "cf:cue-removed": "removed_minus_broken"}
"""The twin's counterfactuals whose change against the published item (cue broken) is a named gap."""


def _bad(sample: SampleResult, field: str, why: str) -> MMSpuBenchError:
    return MMSpuBenchError(f"samples: record {sample.id!r}: field {field!r}: {why}")


def _check_names(sample: SampleResult, entries: Sequence[InterventionAnswer], names: Sequence[str]) -> None:
    """The entries are the run's interventions in order, ``cf:*`` as distinct ``cf:NAME`` entries."""
    got = [e.name for e in entries]
    at = 0
    for name in names:
        if name == CF_ALL:
            while at < len(got) and got[at].startswith(CF_PREFIX) and got[at] not in names:
                at += 1
        elif at < len(got) and got[at] == name:
            at += 1
        else:
            found = repr(got[at][:60]) if at < len(got) else "nothing"
            raise _bad(
                sample,
                "interventions",
                f"entry {at} is {found}; expected {name!r} (run order {list(names)})",
            )
    if at != len(got):
        raise _bad(sample, "interventions", f"entry {at} {got[at][:60]!r} is not an intervention of the run")
    if len(set(got)) != len(got):
        raise _bad(sample, "interventions", "an intervention appears twice")
    for name in got:
        if name.startswith(CF_PREFIX) and not CF_NAME.fullmatch(name[len(CF_PREFIX) :]):
            raise _bad(sample, "interventions.name", f"{name[:60]!r} is not a counterfactual's name")


def _check_entry(sample: SampleResult, entry: InterventionAnswer, config: RunConfig) -> None:
    label = f"{entry.name}: "
    fault = letter_fault(entry.reply)
    if fault:
        raise _bad(sample, "interventions.prediction", label + fault)
    if entry.reply.correct != (entry.reply.prediction == sample.answer):
        raise _bad(sample, "interventions.correct", label + "does not follow from prediction and answer")
    if not DIGEST.fullmatch(entry.digest):
        raise _bad(
            sample, "interventions.digest", label + f"{entry.digest[:70]!r} is not a SHA-256 hex digest"
        )
    unknown = [t for t in entry.targets if t not in TYPE_NAMES]
    if unknown or len(set(entry.targets)) != len(entry.targets):
        raise _bad(
            sample, "interventions.targets", label + f"{list(entry.targets)} are not distinct type names"
        )
    builtin = INTERVENTIONS.get(entry.name)
    if builtin is not None and entry.targets != builtin.targets:
        raise _bad(sample, "interventions.targets", label + f"expected {list(builtin.targets)}")
    # A counterfactual changes some cue. Whether its targets are the item's own can only be told
    # from the dataset (eval checks them before the model loads, submit against the published split).
    if builtin is None and not entry.targets:
        raise _bad(sample, "interventions.targets", label + "none given; a counterfactual targets some type")
    _check_cgla(sample, entry, config, label)


def _check_cgla(sample: SampleResult, entry: InterventionAnswer, config: RunConfig, label: str) -> None:
    if "cgla" not in config.metrics:
        if entry.cgls is not None or entry.cgla_min is not None or entry.cgla_acc is not None:
            raise _bad(sample, "interventions.cgls", label + "set, but the run did not compute CGLA")
        return
    if entry.cgls is None or len(entry.cgls) != len(sample.conditions):
        held = "none" if entry.cgls is None else len(entry.cgls)
        raise _bad(
            sample,
            "interventions.cgls",
            label + f"{held} values; expected one per condition ({len(sample.conditions)})",
        )
    if not all(math.isfinite(v) for v in entry.cgls):
        raise _bad(sample, "interventions.cgls", label + "every CGL must be a finite number")
    value = metrics.cgla_min_of(entry.cgls, [c.kind for c in sample.conditions], config.core_reduction)
    if entry.cgla_min != value or entry.cgla_acc is not metrics.cgla_acc(value):
        raise _bad(
            sample,
            "interventions.cgla_min",
            label + f"{entry.cgla_min!r} (cgla_acc {entry.cgla_acc!r}) does not follow from its cgls "
            f"(expected {value!r}, cgla_acc {metrics.cgla_acc(value)!r})",
        )


def check_config_names(config: RunConfig) -> None:
    """The run's intervention names, as read back from a results.json (not validated there)."""
    try:
        check_names(config.interventions)
    except MMSpuBenchError as err:
        raise MMSpuBenchError(f"config: field 'interventions': {err}") from None


def checked(ordered: Sequence[SampleResult], config: RunConfig) -> list[tuple[InterventionAnswer, ...]]:
    """Each sample's entries, checked against the run and against themselves."""
    check_config_names(config)
    out = []
    for sample in ordered:
        if sample.interventions is None:
            raise _bad(sample, "interventions", "missing in an interventions run")
        if sample.correct is None:
            raise _bad(sample, "correct", "missing in an interventions run")
        _check_names(sample, sample.interventions, config.interventions)
        for entry in sample.interventions:
            _check_entry(sample, entry, config)
        out.append(sample.interventions)
    return out


def _figures(pairs: Sequence[tuple[SampleResult, InterventionAnswer]], config: RunConfig) -> dict[str, Any]:
    """One intervention's figures over the items asked under it."""
    samples = [s for s, _ in pairs]
    entries = [e for _, e in pairs]
    types = [s.types for s in samples]
    vanilla = [bool(s.correct) for s in samples]
    changed = [e.reply.correct for e in entries]
    scored = [metrics.Scored(t, 1.0 if ok else 0.0) for t, ok in zip(types, changed, strict=True)]
    unparsed = sum(1 for e in entries if e.reply.prediction is None)
    flip, flip_by_type = metrics_interventions.flip_rates(
        types, [s.prediction for s in samples], [e.reply.prediction for e in entries]
    )
    targeted = [bool(set(s.types) & set(e.targets)) for s, e in pairs]
    targets = sorted({t for e in entries for t in e.targets}, key=TYPE_NAMES.index)
    out: dict[str, Any] = {
        "targets": [TYPE_ABBREV[t] for t in targets],
        "description": INTERVENTIONS[entries[0].name].description
        if entries[0].name in INTERVENTIONS
        else None,
        "n": len(pairs),
        "accuracy": metrics.accuracy_summary(scored, unparsed, config.seed),
        "change": metrics_interventions.paired_change(types, vanilla, changed, config.seed),
        "flip_rate": flip,
        "flip_rate_by_type": flip_by_type,
        "targeted_contrast": metrics_interventions.targeted_contrast(targeted, vanilla, changed, config.seed),
        "gold_prob_change": None,
        "cgla": None,
    }
    if config.answer_mode == "logprob":
        out["gold_prob_change"] = metrics_interventions.gold_prob_change(
            [_scores(s, "option_scores", "", s.option_scores) for s in samples],
            [
                _scores(s, "interventions.option_scores", f"{e.name}: ", e.reply.option_scores)
                for s, e in pairs
            ],
            [s.answer for s in samples],
            config.seed,
        )
    if "cgla" in config.metrics:
        out["cgla"] = metrics_interventions.cgla_change(
            types, [bool(s.cgla_acc) for s in samples], [bool(e.cgla_acc) for e in entries], config.seed
        )
    return out


def _scores(
    sample: SampleResult, field: str, label: str, scores: tuple[float, ...] | None
) -> tuple[float, ...]:
    if scores is None or len(scores) != 4 or not all(math.isfinite(v) for v in scores):
        shown = None if scores is None else [float(f"{v:.6g}") for v in scores][:6]
        raise _bad(
            sample, field, f"{label}{shown}: four finite letter scores are needed in a logprob-mode run"
        )
    return scores


def section(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``interventions`` (checked records)."""
    per_name: dict[str, list[tuple[SampleResult, InterventionAnswer]]] = {}
    for sample, entries in zip(ordered, checked(ordered, config), strict=True):
        for entry in entries:
            per_name.setdefault(entry.name, []).append((sample, entry))
    if not per_name:
        raise MMSpuBenchError(
            f"samples: no item was asked under --interventions {','.join(config.interventions)} "
            "(no record ships a counterfactual)"
        )
    by_name = {name: _figures(pairs, config) for name, pairs in per_name.items()}
    out: dict[str, Any] = {"names": list(by_name), "by_intervention": by_name}
    gaps = {label: by_name[name]["change"] for name, label in GAPS.items() if name in by_name}
    if gaps:
        out["counterfactual_gaps"] = gaps
    return out
