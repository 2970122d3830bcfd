"""Two finished run folders -> the paired items :mod:`mmspubench.eval.analysis.compare.paired` works on.

A comparison is only meaningful on the same items: both runs must name the same dataset (its
content hash, or Hub id and revision), the same split, and their ``samples.jsonl`` files must hold
exactly the same item ids, each with the same answer and types. Anything else is refused with one
line naming the two folders and what differs. Each ``samples.jsonl`` must be the one its run wrote
(the run stamp of every line, :func:`mmspubench.eval.run_stamp.check_samples_beside`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.hub import display_name
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.compare import side_intervention
from mmspubench.eval.analysis.compare.paired import Pair
from mmspubench.eval.intervention_names import BUILTIN_NAMES, CF_PREFIX
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results import RESULTS_NAME, SAMPLES_NAME, read_finished_samples
from mmspubench.eval.results_file import Dataset, Results, read_results_file
from mmspubench.eval.run_stamp import check_samples_beside
from mmspubench.eval.views.confounds.calibration import option_probs
from mmspubench.options import closest, option

DATASET_KEYS = ("kind", "id", "revision", "content_hash", "split", "split_n", "ids_sha256")
"""results.json ``dataset`` fields that must agree (``path`` too when no content hash pins the data)."""
DEFAULT_VARIANT = "standard"
"""Prompt variant of a run whose results.json records none (runs made before variants existed)."""


SIDES = ("image", "blind")
"""What a run's answers are taken to be: ``image`` (the answers with the image, as recorded),
``blind`` (its blind answers, ``eval --metrics accuracy,blind``, standing in for them), or
``intervention:NAME`` (its answers under that intervention,
:mod:`mmspubench.eval.analysis.compare.side_intervention`)."""
SIDE_HELP = "image (as recorded), blind (its blind answers) or intervention:NAME (its answers under it)"


def _suggestion(side: str) -> str:
    """`` (did you mean X?)``: an intervention's name written without ``intervention:``, or the
    closest side to a misspelt one (``difflib``); ``""`` when none is close."""
    if side in BUILTIN_NAMES or (side.startswith(CF_PREFIX) and len(side) > len(CF_PREFIX)):
        return f" (did you mean {side_intervention.PREFIX}{side[:80]}?)"
    if side.lower() == side_intervention.PREFIX[:-1]:
        return f" (did you mean {side_intervention.PREFIX}NAME, e.g. {side_intervention.PREFIX}{BUILTIN_NAMES[0]}?)"
    spelled = {s: s for s in SIDES}
    for name in BUILTIN_NAMES:
        spelled[name] = spelled[side_intervention.PREFIX + name] = side_intervention.PREFIX + name
    close = closest(side[:200], list(spelled))
    return f" (did you mean {spelled[close]}?)" if close else ""


def _side_fault(side: str) -> str | None:
    if side in SIDES or side.startswith(side_intervention.PREFIX):
        return None
    return f"expected image, blind or intervention:NAME, got {side[:80]!r}{_suggestion(side)}"


def side_arg(text: str) -> str:
    """The command line's side (argparse ``type``): a bad one is argparse's usage error."""
    fault = _side_fault(text)
    if fault:
        raise argparse.ArgumentTypeError(fault)
    return text


@dataclass(frozen=True)
class Sides:
    """The ``compare`` options choosing which answers of its run each side stands for (the fields
    make the flags ``--a-view``/``--b-view``)."""

    a_view: str = option("image", f"run A's answers: {SIDE_HELP}", arg_type=side_arg, metavar="VIEW")
    b_view: str = option("image", f"run B's answers: {SIDE_HELP}", arg_type=side_arg, metavar="VIEW")


@dataclass(frozen=True, slots=True)
class Run:
    """A finished run folder read for a comparison."""

    folder: Path
    """The run folder."""
    results: Results
    """Parsed results.json."""
    samples: dict[str, SampleResult]
    """Parsed samples.jsonl by item id."""
    side: str = "image"
    """Which answers stand for the run (:data:`SIDES`)."""


def run_folder(path: str | Path) -> Path:
    """A run folder from a folder or its results.json."""
    path = Path(path)
    return path.parent if path.name == RESULTS_NAME and path.is_file() else path


def _by_id(samples: Sequence[SampleResult], where: Path) -> dict[str, SampleResult]:
    out: dict[str, SampleResult] = {}
    for sample in samples:
        if sample.id in out and out[sample.id] != sample:
            raise MMSpuBenchError(f"{where}: record {sample.id!r} appears twice with different contents")
        out[sample.id] = sample
    return out


def load_run(path: str | Path) -> Run:
    """Read results.json and samples.jsonl of a finished run folder (or of a results.json's folder)."""
    folder = run_folder(path)
    if not folder.is_dir():
        raise MMSpuBenchError(f"{folder}: no such run folder")
    results = read_results_file(folder / RESULTS_NAME)
    samples = _by_id(read_finished_samples(folder / SAMPLES_NAME), folder / SAMPLES_NAME)
    check_samples_beside(folder / SAMPLES_NAME, results, folder / RESULTS_NAME)
    n = (results.dataset or Dataset()).get("n")
    if n is not None and n != len(samples):
        raise MMSpuBenchError(
            f"{folder / SAMPLES_NAME}: holds {len(samples)} item(s) but {RESULTS_NAME} field 'dataset.n' says {n}"
        )
    return Run(folder=folder, results=results, samples=samples)


def _blind_sample(sample: SampleResult) -> SampleResult:
    """The record as if the blind answer were the answer: no CGLA, no rotations, no interventions
    (each is an answer with an image, and its CGLs follow conditions the side no longer has), and
    option probabilities (softmax of the blind letter scores) only where the run recorded calibration."""
    blind = sample.blind
    assert blind is not None
    probs = None
    if sample.option_probs is not None and blind.option_scores is not None:
        probs = option_probs(blind.option_scores)
    return replace(
        sample,
        prediction=blind.prediction,
        correct=blind.correct,
        raw_output=blind.raw_output,
        option_scores=blind.option_scores,
        conditions=(),
        cgla_min=None,
        cgla_acc=None,
        rotations=None,
        blind=None,
        option_probs=probs,
        interventions=None,
    )


def with_side(run: Run, side: str, letter: str) -> Run:
    """``run`` as ``side`` takes it (``--a-view``/``--b-view``; ``letter``: ``a`` or ``b``)."""
    fault = _side_fault(side)
    if fault:
        raise MMSpuBenchError(f"--{letter}-view: {fault}")
    if side == "image":
        return run
    if side_intervention.name_of(side) is not None:
        samples = side_intervention.intervened(run.samples, run.results, run.folder, side, letter)
        return Run(folder=run.folder, results=run.results, samples=samples, side=side)
    missing = sorted(i for i, s in run.samples.items() if s.blind is None)
    if missing:
        raise MMSpuBenchError(
            f"--{letter}-view blind: {run.folder / SAMPLES_NAME}: record {missing[0]!r} has no field 'blind' "
            "(the run was made without it: eval --metrics accuracy,blind)"
        )
    samples = {i: _blind_sample(s) for i, s in run.samples.items()}
    return Run(folder=run.folder, results=run.results, samples=samples, side=side)


def variant(results: Results) -> str:
    """The run's prompt variant (``config.prompt_variant``), ``standard`` when none is recorded."""
    config = results.config or {}
    return str(config.get("prompt_variant") or config.get("variant") or DEFAULT_VARIANT)


def _dataset(results: Results) -> Mapping[str, Any]:
    """The ``dataset`` object as written (empty when the file has none)."""
    return {} if results.dataset is None else results.dataset.to_json()


def _dataset_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    keys = list(DATASET_KEYS)
    if not (a.get("content_hash") and b.get("content_hash")):
        keys.append("path")
    return [f"dataset.{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]


def _item_differences(a: Run, b: Run) -> list[str]:
    only_a = sorted(set(a.samples) - set(b.samples))
    only_b = sorted(set(b.samples) - set(a.samples))
    out = []
    if only_a:
        out.append(f"{len(only_a)} item(s) only in A, e.g. {only_a[:3]}")
    if only_b:
        out.append(f"{len(only_b)} item(s) only in B, e.g. {only_b[:3]}")
    for item in sorted(set(a.samples) & set(b.samples)):
        x, y = a.samples[item], b.samples[item]
        for name in ("answer", "types"):
            if getattr(x, name) != getattr(y, name):
                out.append(f"record {item!r}: field {name!r}: {getattr(x, name)!r} vs {getattr(y, name)!r}")
    return out


def check_same_items(a: Run, b: Run) -> None:
    """Refuse (one line) unless both runs scored the same items of the same dataset split."""
    diffs = _dataset_differences(_dataset(a.results), _dataset(b.results))
    diffs += _item_differences(a, b)
    if diffs:
        raise MMSpuBenchError(
            f"{a.folder} and {b.folder} are not runs on the same items ({'; '.join(diffs[:3])}); "
            "compare needs two runs of the same dataset, split and items"
        )


def pairs(a: Run, b: Run) -> list[Pair]:
    """The paired items, ordered by id, after :func:`check_same_items`."""
    check_same_items(a, b)
    return [Pair(a.samples[i].types, a.samples[i], b.samples[i]) for i in sorted(a.samples)]


def describe(run: Run) -> dict[str, Any]:
    """How a run is named in the output: folder, model, prompt variant and answer mode."""
    model = run.results.model
    name = None if model is None else model.id or model.get("path")
    out = {
        "folder": str(run.folder),
        "model": display_name(str(name or "?")),
        "variant": variant(run.results),
        "answer_mode": (run.results.config or {}).get("answer_mode"),
        "metrics": run.results.metrics or [],
    }
    if side_intervention.name_of(run.side) is not None:
        out["view"] = side_intervention.description(run.results, run.side)
    elif run.side != "image":  # the description of a plain side is the one of before
        grey = (run.results.section("blind") or {}).get("image") == "grey"
        out["view"] = f"{run.side} ({'a grey image' if grey else 'no image'})"
    return out


def config_differences(a: Run, b: Run) -> dict[str, list[Any]]:
    """The recorded options that differ between the runs (what the comparison is about)."""
    x, y = a.results.config or {}, b.results.config or {}
    skip = {"model", "prompts"}
    out = {k: [x.get(k), y.get(k)] for k in sorted(set(x) | set(y)) if k not in skip and x.get(k) != y.get(k)}
    if a.side != b.side:
        out["view"] = [a.side, b.side]
    return out
