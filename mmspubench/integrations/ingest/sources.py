"""Readers of harness output files: an Inspect AI log, an lmms-eval samples file -> ``HarnessRun``.

Both read the file as strictly as our own readers read ours: JSON with a key given twice is
refused (``dataset_builder.json_strict``), an lmms-eval line over 8 MiB is refused before it is
parsed (``dataset_builder.files``), a text that is not valid Unicode (a lone surrogate) is refused
by name, and the harness version must read as a version. What the run says about its model is
kept as the harness names it (``HarnessRun.harness_model``) and mapped to our model id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.files import MAX_ANNOTATION_BYTES, iter_lines_bounded, read_bytes_bounded
from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.dataset_builder.schema import TYPE_ABBREV
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval.intervention_names import CF_ALL
from mmspubench.eval.replies.record import Tokens, read_tokens
from mmspubench.eval.views.confounds.metrics import ROTATIONS
from mmspubench.integrations.ingest.interventions import (
    INTERVENTION,
    INTERVENTION_FIGURES,
    shown_digest,
    task_interventions,
)
from mmspubench.integrations.ingest.run import (
    BLIND,
    IMAGE,
    VIEW_FIGURES,
    HarnessAnswer,
    HarnessRun,
    claimed_from,
    hub_repo_of,
)
from mmspubench.redact import clean

FIGURES = ("accuracy", "overall", "average", *TYPE_ABBREV.values(), *VIEW_FIGURES)
"""The overall figures a harness may record, as the Inspect task and the lmms-eval task name them."""
LMMS_METRIC = "mm_spubench_acc"
"""The lmms-eval task's metric key; each sample line carries our per-item record under it."""
LMMS_CIRCULAR_METRIC = "mm_spubench_circular_acc"
"""The metric key of the circular variant ``mm_spubench_circular`` (a record per rotation)."""
LMMS_INTERVENTION_FIELD = "intervention"
"""The record field of the intervention tasks (``mm_spubench_grayscale``...): their samples are refused."""
MAX_LOG_PART_BYTES = MAX_ANNOTATION_BYTES
"""Largest JSON part of an Inspect log (a ``.json`` log, or one member of a ``.eval`` zip) read strictly."""
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")
"""A package version as pip writes one (PEP 440 and local labels): nothing a terminal could act on."""
WEIGHT_PROVIDERS = ("mmspubench", "hf", "vllm")
"""Inspect providers whose model part is a Hub id or a local folder (the weights ran locally)."""
VIEWS = (IMAGE, BLIND, INTERVENTION)
"""The ``view`` metadata of the Inspect task's samples (``inspect.views``, ``inspect.interventions``)."""


def text_field(value: Any, source: str, item_id: str, field: str) -> str:
    """``value`` as a text that UTF-8 can store (a lone surrogate is refused), or one error line."""
    if not isinstance(value, str):
        raise record_error(source, item_id, field, "missing or not text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise record_error(
            source, item_id, field, f"holds {value[err.start]!r} at {err.start}, not valid Unicode text"
        ) from None
    return value


def checked_version(value: Any, source: str, harness: str) -> str:
    """The harness version the file records; refused when absent, ``unknown`` or not version-shaped."""
    text = "" if value is None else str(value)
    if text == "unknown" or VERSION.fullmatch(text) is None:
        raise MMSpuBenchError(
            f"{source}: the {harness} version it records ({clean(text)[:40]!r}) is not a version; "
            f"ingest takes files that {harness} wrote"
        )
    return text


def _int_or_none(value: Any, what: str, source: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MMSpuBenchError(f"{source}: {what} {value!r} is not a whole number") from None


def _limit(task_limit: Any, inspect_limit: Any, source: str, per_item: int | None = 1) -> int | None:
    """The items the run covers: ``-T limit=`` and Inspect's own ``--limit N`` (the first N samples;
    with views, ``per_item`` samples make one item; ``None``: a count that varies per item)."""
    limits = [_int_or_none(task_limit, "task argument limit", source)]
    if per_item is None:
        if inspect_limit is not None:
            raise MMSpuBenchError(
                f"{source}: --limit {inspect_limit!r}: under -T interventions=cf:* an item's sample count "
                "varies with its counterfactuals; cut the run with -T limit= instead"
            )
        per_item = 1
    if isinstance(inspect_limit, int) and inspect_limit % per_item == 0:
        limits.append(inspect_limit // per_item)
    elif inspect_limit is not None:
        raise MMSpuBenchError(
            f"{source}: --limit {inspect_limit!r}: only a count of first samples can be ingested"
            + (f", a multiple of the {per_item} samples of an item (or -T limit=)" if per_item > 1 else "")
        )
    given = [n for n in limits if n is not None]
    return min(given) if given else None


def model_id(inspect_model: str) -> str:
    """Our model id for an Inspect model name: a weights provider's (``mmspubench/``, ``hf/``,
    ``vllm/``) Hub id or folder (``mmspubench/bundled``: the bundled model's folder, as ``mmspubench
    eval`` records it); any other name (``openai/gpt-4o-mini``, ``mockllm/model``) as Inspect names it."""
    provider, _, rest = inspect_model.partition("/")
    if provider not in WEIGHT_PROVIDERS or not rest:
        return inspect_model
    if provider == "mmspubench" and rest == "bundled":
        from mmspubench.eval.bundled import bundled_model_dir

        return str(bundled_model_dir())
    return rest


def inspect_hub_repo(inspect_model: str) -> str | None:
    """The Hub model repo an Inspect model name stands for (``None``: an API or mock model)."""
    provider, _, rest = inspect_model.partition("/")
    return hub_repo_of(model_id(inspect_model)) if provider in WEIGHT_PROVIDERS and rest else None


def _view_of(sample: Any, source: str) -> tuple[str, str, int, str]:
    """(item id, view, rotation, intervention) of a sample: the task's metadata, checked against
    the sample id (a sample of a run without views is the published order of the item its id names)."""
    from mmspubench.integrations.inspect import interventions as inspect_interventions
    from mmspubench.integrations.inspect.views import sample_id

    sample_key = text_field(str(sample.id), source, "?", "id")
    meta = sample.metadata if isinstance(sample.metadata, Mapping) else {}
    if "view" not in meta:
        return sample_key, IMAGE, 0, ""
    item_id, view, rotation = meta.get("item_id"), meta.get("view"), meta.get("rotation")
    name = meta.get("intervention", "") if view == INTERVENTION else ""
    if not isinstance(item_id, str) or not isinstance(rotation, int) or view not in VIEWS:
        raise record_error(source, sample_key, "metadata", "not a view of an mm_spubench item")
    if view == INTERVENTION:
        if (
            not isinstance(name, str)
            or rotation != 0
            or inspect_interventions.sample_id(item_id, name) != sample_key
        ):
            raise record_error(source, sample_key, "id", f"does not name an intervention of item {item_id!r}")
    elif rotation not in ROTATIONS or sample_id(item_id, str(view), rotation) != sample_key:
        raise record_error(
            source, sample_key, "id", f"does not name {view} view {rotation} of item {item_id!r}"
        )
    return item_id, str(view), rotation, name


def _images(users: list[Any]) -> int | None:
    from inspect_ai.model import ContentImage

    if len(users) != 1 or isinstance(users[0].content, str):
        return None if len(users) != 1 else 0
    return sum(isinstance(part, ContentImage) for part in users[0].content)


def _tokens(sample: Any, model: str, source: str, item_id: str) -> Tokens | None:
    """The sample's tokens from its ``model_usage`` of the run's model (prompt: input tokens, cached
    ones included; completion: output tokens; reasoning where counted), checked as samples.jsonl's
    ``tokens`` are; ``None`` when the log holds none."""
    usage = (getattr(sample, "model_usage", None) or {}).get(model)
    if usage is None:
        return None
    cached = (usage.input_tokens_cache_read or 0) + (usage.input_tokens_cache_write or 0)
    counts = {"prompt": usage.input_tokens + cached, "completion": usage.output_tokens}
    if usage.reasoning_tokens is not None:
        counts["reasoning"] = usage.reasoning_tokens
    try:
        return read_tokens(counts, "model_usage")
    except (TypeError, ValueError) as err:
        raise record_error(source, item_id, None, clean(str(err))) from None  # err names the field


def _inspect_answer(sample: Any, source: str, model: str) -> HarnessAnswer:
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from mmspubench.eval import prompts
    from mmspubench.integrations.inspect.replies import output_reasoning

    item_id, view, rotation, intervention = _view_of(sample, source)
    systems = (
        [m.text for m in sample.input if isinstance(m, ChatMessageSystem)]
        if isinstance(sample.input, list)
        else []
    )
    if systems != [prompts.SYSTEM]:
        raise record_error(
            source, item_id, "input", "the system prompt is not mmspubench's (standard variant) system text"
        )
    score = (sample.scores or {}).get("choice")
    if score is None or sample.output is None:
        raise record_error(source, item_id, "scores", "no 'choice' score or no output")
    completion = text_field(sample.output.completion, source, item_id, "output")
    reasoning = output_reasoning(sample.output)
    if reasoning is not None:
        reasoning = text_field(reasoning, source, item_id, "output.reasoning")
    if score.explanation is not None and score.explanation != completion:
        raise record_error(source, item_id, "output", "differs from the text its score was given for")
    users = (
        [m for m in sample.input if isinstance(m, ChatMessageUser)] if isinstance(sample.input, list) else []
    )
    target = sample.target if isinstance(sample.target, str) else None
    digest = None
    if view == INTERVENTION:
        digest = shown_digest(sample, source, f"{item_id} ({intervention})")
    return HarnessAnswer(
        id=item_id,
        raw_output=completion,
        claimed_prediction=str(score.answer or ""),
        claimed_correct=score.value == "C",
        user_text=users[0].text if len(users) == 1 else "",
        target=target,
        view=view,
        rotation=rotation,
        images=_images(users),
        intervention=intervention,
        image_digest=digest,
        reasoning=reasoning,
        stop_reason=str(sample.output.stop_reason),
        tokens=_tokens(sample, model, source, item_id),
    )


def _views(args: Mapping[str, Any], source: str) -> tuple[tuple[str, ...], str]:
    """The views the task arguments asked (``circular``, ``blind``) and the blind view's image."""
    views = tuple(name for name in ("circular", "blind") if args.get(name) is True)
    for name in ("circular", "blind"):
        if args.get(name) not in (None, True, False):
            raise MMSpuBenchError(
                f"{source}: task argument {name}={clean(str(args[name]))!r}: not true or false"
            )
    image = str(args.get("blind_image", "none"))
    if image not in ("none", "grey") or (image == "grey" and "blind" not in views):
        raise MMSpuBenchError(
            f"{source}: task argument blind_image={clean(image)!r}: not a blind view's image"
        )
    return views, image


def _samples_per_item(views: tuple[str, ...], interventions: tuple[str, ...]) -> int | None:
    """Samples per item (``None``: it varies with the item, under ``cf:*``)."""
    if CF_ALL in interventions:
        return None
    return (len(ROTATIONS) if "circular" in views else 1) + ("blind" in views) + len(interventions)


def check_strict_json(path: Path, source: str) -> None:
    """Every JSON part of the log parses strictly (a key given twice is refused, as in our files)."""
    if path.suffix == ".json":
        loads_strict(read_bytes_bounded(path, MAX_LOG_PART_BYTES, "an Inspect log"), source)
        return
    import zipfile

    import inspect_ai.log  # noqa: F401  (teaches zipfile the zstd compression of .eval logs)

    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".json"):
                continue
            if info.file_size > MAX_LOG_PART_BYTES:
                raise MMSpuBenchError(f"{source}: part {clean(info.filename)!r} is over the size limit")
            with archive.open(info) as handle:
                loads_strict(handle.read(MAX_LOG_PART_BYTES + 1), f"{source}: part {clean(info.filename)!r}")


def unfinished(log: Any, source: str) -> MMSpuBenchError:
    """What an Inspect run that did not finish did, in one line."""
    samples = list(log.samples or [])
    errored = [s for s in samples if getattr(s, "error", None) is not None]
    scored = [s for s in samples if s.error is None and s.scores]
    reason = getattr(getattr(log, "error", None), "message", None)
    if reason is None and errored:
        reason = getattr(errored[0].error, "message", None)
    why = f"; error: {' '.join(clean(str(reason)).split())[:200]}" if reason else ""
    return MMSpuBenchError(
        f"{source}: the Inspect run did not finish (status {log.status!r}): {len(scored)} of "
        f"{len(samples)} samples scored, {len(errored)} failed{why}; ingest takes finished runs only"
    )


def _claimed(log: Any) -> dict[str, float]:
    """The figures the log records: the fixed ones and every ``NAME_<figure>`` of an intervention
    (one the run did not ask finds no figure of ours and is refused)."""
    suffixes = tuple(f"_{f}" for f in INTERVENTION_FIGURES)
    claimed: dict[str, float] = {}
    for score in log.results.scores if log.results else []:
        values = {k: m.value for k, m in score.metrics.items()}
        claimed.update(claimed_from(values, (*FIGURES, *(k for k in values if k.endswith(suffixes)))))
    return claimed


def read_inspect_log(path: Path) -> HarnessRun:
    """An Inspect log of the ``mm_spubench`` task (``.eval`` or ``.json``), finished with success."""
    from inspect_ai.log import read_eval_log

    source = str(path)
    if not path.is_file():
        raise MMSpuBenchError(f"{source}: no such log file")
    try:
        log = read_eval_log(source)
        check_strict_json(path, source)
    except MMSpuBenchError:
        raise
    except Exception as err:  # Inspect raises many kinds for a broken file; one line for all
        raise MMSpuBenchError(f"{source}: not a readable Inspect log ({type(err).__name__})") from None
    if log.status != "success" or not log.samples:
        raise unfinished(log, source)
    if log.eval.task.rsplit("/", 1)[-1] != "mm_spubench":
        raise MMSpuBenchError(f"{source}: task {clean(log.eval.task)!r} is not mm_spubench")
    args: Mapping[str, Any] = log.eval.task_args or {}
    if str(args.get("prompt_variant", "standard")) != "standard":
        raise MMSpuBenchError(
            f"{source}: task argument prompt_variant={clean(str(args['prompt_variant']))!r}: ingest takes "
            "runs of the standard prompt only (score a mitigation prompt with mmspubench eval --prompt-variant)"
        )
    views, blind_image = _views(args, source)
    interventions = task_interventions(args, source)
    claimed = _claimed(log)
    inspect_model = text_field(str(log.eval.model), source, "?", "eval.model")
    answers = tuple(_inspect_answer(s, source, str(log.eval.model)) for s in log.samples)
    return HarnessRun(
        harness="inspect_ai",
        version=checked_version(log.eval.packages.get("inspect_ai"), source, "inspect_ai"),
        source=source,
        model=model_id(inspect_model),
        dataset=None if args.get("dataset") is None else str(args["dataset"]),
        revision=None if args.get("revision") is None else str(args["revision"]),
        split=str(args.get("split", "test")),
        limit=_limit(
            args.get("limit"), log.eval.config.limit, source, _samples_per_item(views, interventions)
        ),
        max_new_tokens=_int_or_none(args.get("max_tokens"), "task argument max_tokens", source) or 16,
        answers=answers,
        claimed=claimed,
        harness_model=inspect_model,
        hub_repo=inspect_hub_repo(inspect_model),
        views=views,
        blind_image=blind_image,
        interventions=interventions,
        reasoning_style=run_style(answers, source),
    )


def run_style(answers: Sequence[HarnessAnswer], source: str) -> str:
    """The reasoning style of an Inspect run: the one its replies show (``inspect.replies``), or
    ``none`` when none shows any; replies in two styles are one line."""
    from mmspubench.integrations.inspect.replies import reply_style

    styles = {reply_style(a.raw_output, a.reasoning) for a in answers} - {"none"}
    if len(styles) > 1:
        raise MMSpuBenchError(
            f"{source}: replies in more than one reasoning style ({', '.join(sorted(styles))}); "
            "one model writes one"
        )
    return styles.pop() if styles else "none"


def _lmms_record(line: Mapping[str, Any], source: str, number: int) -> tuple[Mapping[str, Any], bool]:
    """The line's record and whether it is one of the circular variant."""
    circular = LMMS_CIRCULAR_METRIC in line and LMMS_METRIC not in line
    record = line.get(LMMS_CIRCULAR_METRIC if circular else LMMS_METRIC)
    if not isinstance(record, Mapping) or not isinstance(record.get("id"), str):
        raise MMSpuBenchError(
            f"{source}: line {number}: field {LMMS_METRIC!r} or {LMMS_CIRCULAR_METRIC!r}: not an mm_spubench record"
        )
    return record, circular


def _lmms_answer(line: Mapping[str, Any], source: str, number: int) -> tuple[HarnessAnswer, str, bool]:
    record, circular = _lmms_record(line, source, number)
    item_id = text_field(record["id"], source, "?", "id")
    raw = text_field(record.get("raw_output"), source, item_id, "raw_output")
    user_text = text_field(record.get("user_text"), source, item_id, "user_text")
    prediction, correct = record.get("prediction"), record.get("correct")
    if (prediction is not None and not isinstance(prediction, str)) or not isinstance(correct, bool):
        raise record_error(source, item_id, "prediction", "malformed prediction or correct")
    if LMMS_INTERVENTION_FIELD in record:  # read as a vanilla run, its figures would be mislabelled
        shown = str(record[LMMS_INTERVENTION_FIELD])[:40]
        raise record_error(
            source,
            item_id,
            LMMS_INTERVENTION_FIELD,
            f"{shown!r}: a record of an intervention task (mm_spubench_<name>); ingest reads the "
            "samples of mm_spubench or mm_spubench_circular (mmspubench eval --interventions scores interventions)",
        )
    rotation = record.get("rotation", 0) if circular else 0
    if isinstance(rotation, bool) or rotation not in ROTATIONS:
        raise record_error(source, item_id, "rotation", f"{rotation!r} is not a rotation 0-3")
    target = line.get("target")
    answer = HarnessAnswer(
        id=item_id,
        raw_output=raw,
        claimed_prediction=prediction or "",
        claimed_correct=correct,
        user_text=user_text,
        target=target if isinstance(target, str) else None,
        rotation=int(rotation),
    )
    version = checked_version(record.get("harness_version"), f"{source}: line {number}", "lmms_eval")
    return answer, version, circular


def read_lmms_samples(
    path: Path, model: str, dataset: str | None, revision: str | None, split: str = "test"
) -> HarnessRun:
    """An lmms-eval ``*_samples_mm_spubench.jsonl`` (``--log_samples``) of the shipped task."""
    source = str(path)
    if not model.strip() or clean(model) != model or "\n" in model:
        raise MMSpuBenchError(f"--model {model!r}: expected the model's Hub id (org/name) or a name")
    if not path.is_file():
        raise MMSpuBenchError(f"{source}: no such samples file")
    answers, versions, kinds = [], set(), set()
    for number, text in iter_lines_bounded(path, "an lmms-eval samples file"):
        if not text.strip():
            continue
        line = loads_strict(text, f"{source}: line {number}")
        if not isinstance(line, Mapping):
            raise MMSpuBenchError(f"{source}: line {number}: not a JSON object")
        answer, harness_version, circular = _lmms_answer(line, source, number)
        answers.append(answer)
        versions.add(harness_version)
        kinds.add(circular)
    if not answers or len(versions) != 1:
        raise MMSpuBenchError(
            f"{source}: no samples, or samples of several lmms-eval versions {sorted(versions)}"
        )
    if len(kinds) != 1:
        raise MMSpuBenchError(
            f"{source}: lines of both mm_spubench and mm_spubench_circular; one task per file"
        )
    return HarnessRun(
        harness="lmms_eval",
        version=versions.pop(),
        source=source,
        model=model,
        dataset=dataset,
        revision=revision,
        split=split,
        limit=None,
        max_new_tokens=16,
        answers=tuple(answers),
        claimed={},
        harness_model=model,
        hub_repo=hub_repo_of(model),
        views=("circular",) if kinds == {True} else (),
    )
