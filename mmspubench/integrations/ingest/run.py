"""A finished harness run -> our run folder: samples.jsonl and results.json recomputed by our code.

Each harness reader (``ingest.sources``) yields the raw answer text per item id and what the run
says about itself (its figures per item and overall). Here every answer is read again with our
parser against the item as our loader reads it, the harness's own figures are checked against
that reading (a log whose scores or figures were edited is refused), and the run folder is written
as ``mmspubench eval --metrics accuracy --answer-mode generate`` writes one, marked with the
harness and its version (``results.json`` ``harness``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.files import MAX_JSONL_LINE_BYTES, size_text
from mmspubench.dataset_builder.hub import is_hub_id
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval import prompts, results
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import Answer, InterventionAnswer, Rotation, SampleResult
from mmspubench.eval.replies.parse import parse_answer
from mmspubench.eval.replies.record import ReplyReading, Tokens
from mmspubench.eval.run_stamp import model_identity, run_stamp
from mmspubench.eval.views.confounds import metrics as metrics_confounds
from mmspubench.eval.views.interventions.images import Shown
from mmspubench.integrations.ingest.interventions import (
    INTERVENTION,
    check_shown,
    intervention_figures,
    shown_of,
)
from mmspubench.integrations.items import Split, SplitItem, by_id

IMAGE = "image"
"""A view shown with the item's image (the published order, or a rotation of it)."""
BLIND = "blind"
"""The view asked without the image."""
TOLERANCE = 1e-9
"""How far a figure the harness recorded may sit from ours (float formatting, nothing more)."""


@dataclass(frozen=True, slots=True)
class HarnessAnswer:
    """One item's answer as the harness recorded it."""

    id: str
    """Item id."""
    raw_output: str
    """The model's answer text."""
    claimed_prediction: str | None
    """The letter the harness recorded as the answer (``None``: none, or not recorded)."""
    claimed_correct: bool | None
    """Whether the harness scored it correct (``None``: not recorded)."""
    user_text: str | None = None
    """The prompt text the harness sent, when it records one (checked against ours)."""
    target: str | None = None
    """The answer letter the harness scored against, when it records one (checked against ours)."""
    view: str = IMAGE
    """``image`` (shown with the item's image), ``blind`` (the blind view) or ``intervention``."""
    rotation: int = 0
    """The rotation of the options shown (0: the published order; ``eval.views.confounds.metrics``)."""
    images: int | None = None
    """How many images the prompt held, when the harness records it (checked against the view)."""
    intervention: str = ""
    """The intervention of the ``intervention`` view (a built-in name or ``cf:NAME``); else empty."""
    image_digest: str | None = None
    """``interventions.pixel_digest`` of the image the prompt showed, when the harness records the
    image (checked against the intervened image in the ``intervention`` view)."""
    reasoning: str | None = None
    """The reasoning the harness kept apart from ``raw_output`` (Inspect's ``ContentReasoning``)."""
    stop_reason: str | None = None
    """Why the reply stopped, as the harness says it (Inspect: ``max_tokens`` is the token budget)."""
    tokens: Tokens | None = None
    """The reply's tokens as the harness counted them (Inspect's ``model_usage``); ``None``: none."""


@dataclass(frozen=True, slots=True)
class HarnessRun:
    """What a harness's output file says about the run."""

    harness: str
    """``inspect_ai`` or ``lmms_eval``."""
    version: str
    """The harness's version as its output records it."""
    source: str
    """The file read (for messages)."""
    model: str
    """The model name the harness recorded."""
    dataset: str | None
    """The dataset argument (Hub id, built folder or raw release; ``None``: the bundled release)."""
    revision: str | None
    """The Hub revision, when the dataset is a Hub id."""
    split: str
    """The split evaluated."""
    limit: int | None
    """The harness's item limit (``None``: the whole split)."""
    max_new_tokens: int
    """Answer length asked for."""
    answers: tuple[HarnessAnswer, ...]
    """Every answer, in the file's order."""
    claimed: Mapping[str, float]
    """Overall figures the harness recorded (``accuracy`` as a fraction; ``overall``, ``average`` and
    per-type as percentages), only those it recorded."""
    harness_model: str = ""
    """The model as the harness names it (Inspect's ``provider/model``; lmms-eval: ``--model``)."""
    hub_repo: str | None = None
    """The Hub model repo the run evaluated (``None``: none, e.g. an API model such as Inspect's
    ``openai/gpt-4o-mini``); written as ``model.hub_repo``, read by ``markup.is_hub_model``."""
    views: tuple[str, ...] = ()
    """The confound views the run asked (``circular``, ``blind``), as ``mmspubench eval --metrics``."""
    blind_image: str = "none"
    """What the blind view showed: ``none`` or ``grey`` (``--blind-image``)."""
    interventions: tuple[str, ...] = ()
    """The interventions the run asked (``--interventions``, ``cf:*`` not expanded); empty: none."""
    reasoning_style: str = "none"
    """How the replies delimit their reasoning (``eval.replies.reasoning``); not ``none``: each
    answer is read after its reasoning and records its reading and tokens, as eval's answers do."""


Key = tuple[str, int, str]
"""One answer of an item: (view, rotation, intervention)."""


def hub_repo_of(model: str) -> str | None:
    """``model`` when it reads as an ``org/name`` Hub id and names no local folder, else ``None``."""
    return model if is_hub_id(model) and "/" in model and not Path(model).exists() else None


def _view_text(answer: HarnessAnswer) -> str:
    """``blind 0``, ``image 2``, or the intervention's name."""
    return answer.intervention if answer.view == INTERVENTION else f"{answer.view} {answer.rotation}"


def _label(item_id: str, answer: HarnessAnswer) -> str:
    """The record a message names: the item id, with the view when it is not the published order."""
    published = answer.view == IMAGE and answer.rotation == 0
    return item_id if published else f"{item_id} ({_view_text(answer)})"


def _read(
    answer: HarnessAnswer, split_item: SplitItem, rotation: int, source: str, style: str = "none"
) -> Answer:
    """One answer read again with our parser against the options as shown in ``rotation`` (under
    a reasoning ``style``: from the text after its reasoning); the prompt, target and score the
    harness recorded must follow from the item."""
    item = split_item.item
    options = metrics_confounds.rotated_options(item.options, rotation)
    gold = metrics_confounds.rotated_answer(item.answer, rotation)
    where = _label(item.id, answer)
    if (
        answer.user_text is not None
        and answer.user_text != prompts.mcq_prompt(item.question, options, "generate").user_text
    ):
        raise record_error(source, where, "input", "the prompt text is not mmspubench's multiple-choice text")
    if answer.target is not None and answer.target != gold:
        raise record_error(source, where, "target", f"{answer.target!r} but the item's answer is {gold!r}")
    reading = None
    if style == "none":
        prediction = parse_answer(answer.raw_output, options)
    else:
        reading, prediction = _reading(answer, options, style)
    correct = prediction == gold
    if answer.claimed_correct is not None and answer.claimed_correct != correct:
        raise record_error(
            source,
            where,
            "score",
            f"recorded {answer.claimed_correct} but the answer reads as {prediction!r}",
        )
    if answer.claimed_prediction is not None and answer.claimed_prediction != (prediction or ""):
        raise record_error(
            source,
            where,
            "answer",
            f"recorded {answer.claimed_prediction!r} but the output reads as {prediction!r}",
        )
    return Answer(prediction, correct, answer.raw_output, None, reading)


def _reading(answer: HarnessAnswer, options: Sequence[str], style: str) -> tuple[ReplyReading, str | None]:
    """An answer of a reasoning run read as eval reads a generated reply (``inspect.replies``)."""
    from mmspubench.integrations.inspect.replies import read_inspect_reply

    split, found = read_inspect_reply(
        answer.raw_output, answer.reasoning, answer.stop_reason, options, style=style
    )
    reading = ReplyReading(split.answer_text, found.read_by, split.reasoning, split.truncated, answer.tokens)
    return reading, found.prediction


def _intervened(
    group: Mapping[Key, HarnessAnswer], read: Mapping[Key, Answer], shown: Sequence[Shown], source: str
) -> tuple[InterventionAnswer, ...]:
    """The sample's ``interventions`` entries; each image the harness showed must be the intervened one."""
    out = []
    for changed in shown:
        key = (INTERVENTION, 0, changed.name)
        check_shown(source, _label(group[key].id, group[key]), group[key].image_digest, changed)
        out.append(
            InterventionAnswer(changed.name, changed.targets, changed.digest, read[key], None, None, None)
        )
    return tuple(out)


def _sample(
    group: Mapping[Key, HarnessAnswer], split_item: SplitItem, run: HarnessRun, shown: Sequence[Shown]
) -> SampleResult:
    item, source = split_item.item, run.source
    read = {
        key: _read(answer, split_item, key[1], source, run.reasoning_style) for key, answer in group.items()
    }
    published = read[(IMAGE, 0, "")]
    rotations = None
    if "circular" in run.views:
        rotations = tuple(
            Rotation(
                k,
                metrics_confounds.rotation_order(k),
                metrics_confounds.rotated_answer(item.answer, k),
                read[(IMAGE, k, "")],
            )
            for k in metrics_confounds.ROTATIONS
        )
    return SampleResult(
        id=item.id,
        types=item.spurious_types,
        answer=item.answer,
        prediction=published.prediction,
        correct=published.correct,
        raw_output=published.raw_output,
        option_scores=None,
        reading=published.reading,
        class_name=item.class_name,
        conditions=(),
        cgla_min=None,
        cgla_acc=None,
        rotations=rotations,
        blind=read[(BLIND, 0, "")] if "blind" in run.views else None,
        interventions=_intervened(group, read, shown, source) if run.interventions else None,
    )


def expected_views(run: HarnessRun, shown: Sequence[Shown] = ()) -> set[Key]:
    """The (view, rotation, intervention) answers an item has in ``run`` (``shown``: the item's
    intervened images, ``ingest.interventions.shown_of``)."""
    rotations = metrics_confounds.ROTATIONS if "circular" in run.views else (0,)
    out = {(IMAGE, k, "") for k in rotations} | ({(BLIND, 0, "")} if "blind" in run.views else set())
    return out | {(INTERVENTION, 0, s.name) for s in shown}


def _check_images(answer: HarnessAnswer, run: HarnessRun) -> None:
    if answer.images is None:
        return
    wanted = 0 if answer.view == BLIND and run.blind_image == "none" else 1
    if answer.images != wanted:
        raise record_error(
            run.source,
            answer.id,
            "input",
            f"{answer.images} image(s) in the {answer.view} view, expected {wanted}",
        )


def _grouped(run: HarnessRun, items: Mapping[str, SplitItem]) -> dict[str, dict[Key, HarnessAnswer]]:
    """The answers by item id and key, each an item of the split, each key once."""
    groups: dict[str, dict[Key, HarnessAnswer]] = {}
    for answer in run.answers:
        key = (answer.view, answer.rotation, answer.intervention)
        if answer.id not in items:
            raise record_error(run.source, answer.id, "id", "not an item of the split")
        group = groups.setdefault(answer.id, {})
        if key in group:
            raise record_error(run.source, answer.id, "id", f"appears twice ({_view_text(answer)})")
        _check_images(answer, run)
        group[key] = answer
    return groups


def samples_for(run: HarnessRun, split: Split) -> list[SampleResult]:
    """Our samples from the harness's answers; every id an item of the split, each view of it
    (published order, rotations, blind, interventions) once, all present."""
    items = by_id(split.items)
    groups = _grouped(run, items)
    shown = {s.item.id: shown_of(run.interventions, s, run.source) for s in split.items}
    missing = []
    for split_item in split.items:
        wanted = expected_views(run, shown[split_item.item.id])
        got = groups.get(split_item.item.id, {})
        extra = sorted(set(got) - wanted)
        if extra:
            view, rotation, name = extra[0]
            what = f"intervention {name!r}" if view == INTERVENTION else str((view, rotation))
            raise record_error(run.source, split_item.item.id, "view", f"{what} is not a view of this run")
        if set(got) != wanted:
            missing.append(split_item.item.id)
    if missing:
        names = sorted(f"{v} {n or k}" for v, k, n in expected_views(run, shown[missing[0]]))
        raise MMSpuBenchError(
            f"{run.source}: {len(missing)} item(s) of the split lack an answer of a view "
            f"({', '.join(names)}), e.g. {missing[:3]}"
        )
    return [_sample(groups[i], items[i], run, shown[i]) for i in groups]


VIEW_FIGURES = {
    "circular_accuracy": ("circular", "accuracy"),
    "circular_average": ("circular", "average"),
    "vanilla_accuracy": ("circular", "vanilla_accuracy"),
    "rotation_accuracy": ("circular", "rotation_accuracy"),
    "consistency": ("circular", "consistency"),
    "position_bias_p": ("circular", "position_bias_p"),
    "blind_accuracy": ("blind", "accuracy"),
    "blind_average": ("blind", "average"),
    "blind_gain": ("blind", "gain"),
}
"""A confound figure a harness may record -> the results.json section and key it must equal."""


def check_claims(run: HarnessRun, built: Mapping[str, Any]) -> None:
    """The harness's overall figures equal ours (``built``: results.json), recomputed from the same answers."""
    accuracy = built["accuracy"]
    ours = {
        "accuracy": accuracy["overall"] / 100.0,
        "overall": accuracy["overall"],
        "average": accuracy["average"],
    }
    ours.update({k: v for k, v in accuracy["by_type"].items() if v is not None})
    for name, (section, key) in VIEW_FIGURES.items():
        if built.get(section) is not None:
            ours[name] = built[section][key]
    ours.update(intervention_figures(built))
    for name, value in run.claimed.items():
        close = name in ours and math.isfinite(float(value)) and abs(float(value) - ours[name]) <= TOLERANCE
        if not close:
            raise MMSpuBenchError(
                f"{run.source}: figure {name!r}: recorded {value!r} but its answers give {ours.get(name)!r}"
            )


def _config(run: HarnessRun) -> RunConfig:
    return RunConfig(
        model=run.model,
        dataset=run.dataset,
        split=run.split,
        dataset_revision=run.revision,
        metrics=("accuracy", *run.views, *(("interventions",) if run.interventions else ())),
        blind_image="grey" if run.blind_image == "grey" else "none",
        interventions=run.interventions,
        limit=run.limit,
        answer_mode="generate",
        max_new_tokens=run.max_new_tokens,
        prompts=prompts.prompt_spec(),
    )


def _model_section(run: HarnessRun) -> dict[str, Any]:
    return {
        "id": run.model,
        "path": "",
        "revision": None,
        "dtype": "unknown",
        "adapter": run.harness,
        "scorer_used": None,
        "scorer_fallback_reason": None,
        "hub_repo": run.hub_repo,
        **({} if run.reasoning_style == "none" else {"reasoning_style": run.reasoning_style}),
    }


def check_out(out: Path) -> None:
    """``out`` is a new or empty folder (an ingested run never mixes with another)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MMSpuBenchError(f"{out}: exists and is not an empty folder; pass a new --out")


def sample_lines(samples: Sequence[SampleResult], stamp: str, source: str) -> list[bytes]:
    """The ``samples.jsonl`` lines, each within the line limit every reader of the run enforces."""
    lines = []
    for sample in samples:
        line = results.sample_line(sample, stamp)
        if len(line) > MAX_JSONL_LINE_BYTES:
            raise record_error(
                source,
                sample.id,
                "raw_output",
                f"the answer makes a samples.jsonl line of {size_text(len(line))}, over the limit of "
                f"{size_text(MAX_JSONL_LINE_BYTES)} that report, compare and submit read",
            )
        lines.append(line)
    return lines


def write_run(run: HarnessRun, split: Split, out: Path) -> dict[str, Any]:
    """Check everything, then write ``out/samples.jsonl`` and ``out/results.json``; return the results.

    Every line is built and checked before ``out`` is made, so a refusal leaves no folder behind."""
    check_out(out)
    samples = samples_for(run, split)
    config = dataclasses.replace(_config(run), out=str(out))
    ids = [s.item.id for s in split.items]
    model = _model_section(run)
    backend = {"name": run.harness, "version": run.version}
    built = results.build_results(config, model, split.identity, samples, ids, {}, backend)
    check_claims(run, built)
    built["harness"] = {
        "name": run.harness,
        "version": run.version,
        "source": Path(run.source).name,
        "model": run.harness_model or run.model,
    }
    stamp = run_stamp(config.identity(), split.identity, model_identity(model))
    ordered = {s.id: s for s in samples}
    lines = sample_lines([ordered[i] for i in ids], stamp, run.source)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        results.write_bytes_atomic(out / results.SAMPLES_NAME, lines)
        results.write_json_atomic(out / results.RESULTS_NAME, built)
    except BaseException:
        (out / results.SAMPLES_NAME).unlink(missing_ok=True)
        if created:
            out.rmdir()
        raise
    return built


def ingest(run: HarnessRun, out: Path) -> dict[str, Any]:
    """Load the split the harness ran (our loader), then :func:`write_run`."""
    from mmspubench.integrations.items import load_split

    return write_run(run, load_split(run.dataset, run.revision, run.split, run.limit), out)


def claimed_from(values: Mapping[str, Any], names: Sequence[str]) -> dict[str, float]:
    """The numeric figures among ``names`` in ``values``."""
    return {n: float(values[n]) for n in names if isinstance(values.get(n), (int, float))}
