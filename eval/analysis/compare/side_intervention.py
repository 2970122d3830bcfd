"""``compare --a-view/--b-view intervention:NAME``: a run's answers under one of its interventions.

The side's records become the run's records as if the intervened answer were the answer: the
prediction, ``correct``, raw output and letter scores of that intervention's entry; its CGLs in
place of the conditions' (with its CGLA_min and CGLA_acc) when the run computed CGLA; option
probabilities (softmax of its letter scores) only where the run recorded calibration. No
rotations, blind answer or other interventions stand for it. ``compare RUN RUN --b-view
intervention:grayscale`` then pairs every item's published answer with its answer to the changed
image: the comparison's B - A is the run's own ``change`` under that intervention.

The run's entries are checked first, as the run's results were computed
(:func:`mmspubench.eval.views.interventions.record.checked`): an edited entry is refused, never counted.
A name the run lacks, ``cf:*`` (several counterfactuals), or an item without the entry is one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.intervention_names import CF_ALL
from mmspubench.eval.records import InterventionAnswer, SampleResult
from mmspubench.eval.results import SAMPLES_NAME
from mmspubench.eval.results_file import Results
from mmspubench.eval.views.confounds.calibration import option_probs
from mmspubench.eval.views.interventions import record as results_interventions

PREFIX = "intervention:"
"""A side naming one intervention of the run: ``intervention:grayscale``, ``intervention:cf:cue-aligned``."""


def name_of(side: str) -> str | None:
    """The intervention a side names, or ``None`` when it is not an intervention side."""
    return side[len(PREFIX) :] if side.startswith(PREFIX) else None


def _names(samples: Mapping[str, SampleResult]) -> list[str]:
    """The interventions the run's records hold, in the order first met (item ids sorted)."""
    seen: dict[str, None] = {}
    for item in sorted(samples):
        for entry in samples[item].interventions or ():
            seen.setdefault(entry.name, None)
    return list(seen)


def _config(results: Results, folder: Path, flag: str) -> RunConfig:
    try:
        if results.config is None:
            raise KeyError("config")
        return RunConfig.from_json(results.config)
    except (KeyError, ValueError, TypeError, MMSpuBenchError) as err:
        raise MMSpuBenchError(
            f"{flag}: {folder / 'results.json'}: field 'config' is malformed ({err})"
        ) from None


def check_entries(samples: Mapping[str, SampleResult], results: Results, folder: Path, flag: str) -> None:
    """The run's entries as its results were computed from them (an edited entry is refused);
    ``flag`` starts the error line (the option, or the command)."""
    ordered = [samples[i] for i in sorted(samples)]
    config = _config(results, folder, flag)
    try:
        results_interventions.checked(ordered, config)
    except MMSpuBenchError as err:
        text = str(err).removeprefix("samples: ")
        raise MMSpuBenchError(f"{flag}: {folder / SAMPLES_NAME}: {text}") from None


def _entry(sample: SampleResult, name: str) -> InterventionAnswer | None:
    return next((e for e in sample.interventions or () if e.name == name), None)


def _intervened_sample(sample: SampleResult, entry: InterventionAnswer) -> SampleResult:
    reply = entry.reply
    probs = None
    if sample.option_probs is not None and reply.option_scores is not None:
        probs = option_probs(reply.option_scores)
    with_cgla = entry.cgls is not None
    conditions = (
        tuple(replace(c, cgl=v) for c, v in zip(sample.conditions, entry.cgls or (), strict=True))
        if with_cgla
        else ()
    )
    return replace(
        sample,
        prediction=reply.prediction,
        correct=reply.correct,
        raw_output=reply.raw_output,
        option_scores=reply.option_scores,
        conditions=conditions,
        cgla_min=entry.cgla_min if with_cgla else None,
        cgla_acc=entry.cgla_acc if with_cgla else None,
        rotations=None,
        blind=None,
        option_probs=probs,
        interventions=None,
    )


def intervened(
    samples: Mapping[str, SampleResult], results: Results, folder: Path, side: str, letter: str
) -> dict[str, SampleResult]:
    """The records of ``folder``'s run as ``side`` takes them (``intervention:NAME``; ``letter``: a or b)."""
    flag = f"--{letter}-view {side[:80]}"
    name = name_of(side) or ""
    have = _names(samples)
    hint = (
        f"the run has {', '.join(n[:60] for n in have[:8])}" + (", ..." if len(have) > 8 else "")
        if have
        else "the run has none (eval --metrics accuracy,interventions)"
    )
    if not name:
        raise MMSpuBenchError(f"{flag}: name one intervention after 'intervention:' ({hint})")
    if name == CF_ALL:
        raise MMSpuBenchError(f"{flag}: cf:* stands for several counterfactuals; name one ({hint})")
    if name not in have:
        raise MMSpuBenchError(
            f"{flag}: {folder / SAMPLES_NAME}: no record holds the intervention {name[:80]!r} ({hint})"
        )
    check_entries(samples, results, folder, flag)  # an edited entry is named as such, first
    missing = sorted(i for i, s in samples.items() if _entry(s, name) is None)
    if missing:
        raise MMSpuBenchError(
            f"{flag}: {folder / SAMPLES_NAME}: record {missing[0]!r} has no {name!r} entry ({len(missing)} "
            f"of {len(samples)} items lack it); the view needs it on every item"
        )
    out = {}
    for item, sample in samples.items():
        entry = _entry(sample, name)
        assert entry is not None  # every item holds it (checked above)
        out[item] = _intervened_sample(sample, entry)
    return out


def description(results: Results, side: str) -> str:
    """How the side is named: ``intervention:grayscale (colour removed ...)``."""
    name = name_of(side) or ""
    section = results.section("interventions")
    by_name = section.get("by_intervention") if isinstance(section, Mapping) else None
    figures = by_name.get(name) if isinstance(by_name, Mapping) else None
    text = figures.get("description") if isinstance(figures, Mapping) else None
    return f"{side} ({text})" if isinstance(text, str) and text else side
