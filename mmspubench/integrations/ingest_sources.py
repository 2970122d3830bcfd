"""Readers of harness output files: an Inspect AI log, an lmms-eval samples file -> ``HarnessRun``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.schema import TYPE_ABBREV
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.integrations.ingest import HarnessAnswer, HarnessRun, claimed_from

FIGURES = ("accuracy", "overall", "average", *TYPE_ABBREV.values())
"""The overall figures a harness may record, as the Inspect task and the lmms-eval task name them."""
LMMS_METRIC = "mm_spubench_acc"
"""The lmms-eval task's metric key; each sample line carries our per-item record under it."""


def _int_or_none(value: Any, what: str, source: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MMSpuBenchError(f"{source}: {what} {value!r} is not a whole number") from None


def _limit(task_limit: Any, inspect_limit: Any, source: str) -> int | None:
    """The items the run covers: ``-T limit=`` and Inspect's own ``--limit N`` (the first N samples)."""
    limits = [_int_or_none(task_limit, "task argument limit", source)]
    if isinstance(inspect_limit, int):
        limits.append(inspect_limit)
    elif inspect_limit is not None:
        raise MMSpuBenchError(
            f"{source}: --limit {inspect_limit!r}: only a count of first samples can be ingested"
        )
    given = [n for n in limits if n is not None]
    return min(given) if given else None


def _model_name(inspect_model: str) -> str:
    """Our provider's ``mmspubench/<folder or Hub id>`` -> the folder or Hub id; others as Inspect names them."""
    provider, _, rest = inspect_model.partition("/")
    return rest if provider == "mmspubench" and rest else inspect_model


def _inspect_answer(sample: Any, source: str) -> HarnessAnswer:
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from mmspubench.eval import prompts

    item_id = str(sample.id)
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
    if score.explanation is not None and score.explanation != sample.output.completion:
        raise record_error(source, item_id, "output", "differs from the text its score was given for")
    users = (
        [m for m in sample.input if isinstance(m, ChatMessageUser)] if isinstance(sample.input, list) else []
    )
    target = sample.target if isinstance(sample.target, str) else None
    return HarnessAnswer(
        id=item_id,
        raw_output=sample.output.completion,
        claimed_prediction=str(score.answer or ""),
        claimed_correct=score.value == "C",
        user_text=users[0].text if len(users) == 1 else "",
        target=target,
    )


def read_inspect_log(path: Path) -> HarnessRun:
    """An Inspect log of the ``mm_spubench`` task (``.eval`` or ``.json``), finished with success."""
    from inspect_ai.log import read_eval_log

    source = str(path)
    if not path.is_file():
        raise MMSpuBenchError(f"{source}: no such log file")
    try:
        log = read_eval_log(source)
    except Exception as err:  # Inspect raises many kinds for a broken file; one line for all
        raise MMSpuBenchError(f"{source}: not a readable Inspect log ({type(err).__name__})") from None
    if log.status != "success" or not log.samples:
        raise MMSpuBenchError(
            f"{source}: the run's status is {log.status!r} with {len(log.samples or [])} samples"
        )
    if log.eval.task.rsplit("/", 1)[-1] != "mm_spubench":
        raise MMSpuBenchError(f"{source}: task {log.eval.task!r} is not mm_spubench")
    args: Mapping[str, Any] = log.eval.task_args or {}
    if str(args.get("prompt_variant", "standard")) != "standard":
        raise MMSpuBenchError(
            f"{source}: task argument prompt_variant={args['prompt_variant']!r}: ingest takes runs of the "
            "standard prompt only (score a mitigation prompt with mmspubench eval --prompt-variant)"
        )
    claimed: dict[str, float] = {}
    for score in log.results.scores if log.results else []:
        claimed.update(claimed_from({k: m.value for k, m in score.metrics.items()}, FIGURES))
    return HarnessRun(
        harness="inspect_ai",
        version=str(log.eval.packages.get("inspect_ai", "unknown")),
        source=source,
        model=_model_name(str(log.eval.model)),
        dataset=None if args.get("dataset") is None else str(args["dataset"]),
        revision=None if args.get("revision") is None else str(args["revision"]),
        split=str(args.get("split", "test")),
        limit=_limit(args.get("limit"), log.eval.config.limit, source),
        max_new_tokens=_int_or_none(args.get("max_tokens"), "task argument max_tokens", source) or 16,
        answers=tuple(_inspect_answer(s, source) for s in log.samples),
        claimed=claimed,
    )


def _lmms_answer(line: Mapping[str, Any], source: str, number: int) -> tuple[HarnessAnswer, str]:
    record = line.get(LMMS_METRIC)
    if not isinstance(record, Mapping) or not isinstance(record.get("id"), str):
        raise MMSpuBenchError(f"{source}: line {number}: field {LMMS_METRIC!r}: not an mm_spubench record")
    raw, user_text = record.get("raw_output"), record.get("user_text")
    if not isinstance(raw, str) or not isinstance(user_text, str):
        raise record_error(source, record["id"], "raw_output", "missing or not text")
    prediction, correct = record.get("prediction"), record.get("correct")
    if (prediction is not None and not isinstance(prediction, str)) or not isinstance(correct, bool):
        raise record_error(source, record["id"], "prediction", "malformed prediction or correct")
    target = line.get("target")
    answer = HarnessAnswer(
        id=record["id"],
        raw_output=raw,
        claimed_prediction=prediction or "",
        claimed_correct=correct,
        user_text=user_text,
        target=target if isinstance(target, str) else None,
    )
    return answer, str(record.get("harness_version", "unknown"))


def read_lmms_samples(
    path: Path, model: str, dataset: str | None, revision: str | None, split: str = "test"
) -> HarnessRun:
    """An lmms-eval ``*_samples_mm_spubench.jsonl`` (``--log_samples``) of the shipped task."""
    source = str(path)
    if not path.is_file():
        raise MMSpuBenchError(f"{source}: no such samples file")
    answers, versions = [], set()
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError:
                raise MMSpuBenchError(f"{source}: line {number}: not JSON") from None
            if not isinstance(line, Mapping):
                raise MMSpuBenchError(f"{source}: line {number}: not a JSON object")
            answer, harness_version = _lmms_answer(line, source, number)
            answers.append(answer)
            versions.add(harness_version)
    if not answers or len(versions) != 1:
        raise MMSpuBenchError(
            f"{source}: no samples, or samples of several lmms-eval versions {sorted(versions)}"
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
    )
