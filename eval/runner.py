"""Scoring of items (accuracy and CGLA) and the resumable run loop.

The runner talks to the model only through ``VisionLanguageModel`` and works in chunks of up to
``batch_size`` items:

- accuracy, ``generate`` mode: one greedy answer per item (one ``generate`` call per chunk) read by
  ``parse_answer``; ``logprob`` mode: the four option letters of every item of the chunk scored in
  one ``score`` call, argmax per item.
- CGLA: one ``ScoreRequest`` per core and spurious attribute of every item of the chunk, all in ONE
  ``score`` call, so that a prefix-sharing scorer encodes each image and shared prompt prefix once
  and shares passes across items.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import Item
from mmspubench.dataset_builder.split_ids import split_identity
from mmspubench.errors import Interrupted, MMSpuBenchError
from mmspubench.eval import (
    asking,
    backends,
    data,
    distributed,
    environment,
    metrics,
    prompts,
    results,
    run_folder,
    scorer_check,
)
from mmspubench.eval.asking import max_new_tokens
from mmspubench.eval.config import RunConfig
from mmspubench.eval.protocol import ScoreRequest, VisionLanguageModel
from mmspubench.eval.records import Condition, SampleResult, part_fields
from mmspubench.eval.replies.judge import judge_for
from mmspubench.eval.run_stamp import MODEL_SETTING_KEYS, check_stamps, model_identity, run_stamp
from mmspubench.eval.views import registry
from mmspubench.eval.views.plugin import Chunk

if TYPE_CHECKING:
    import datasets
    from mmspubench.eval.replies.reading import Judge

__all__ = ["Clock", "RunPlan", "evaluate_item", "evaluate_items", "max_new_tokens", "plan_run", "run_eval"]


@dataclass(slots=True)
class Clock:
    """Seconds spent in model calls, accumulated over a run (mutable on purpose: a running total)."""

    accuracy_seconds: float = 0.0
    """Time in the accuracy calls (generate, or scoring the option letters)."""
    cgla_seconds: float = 0.0
    """Time in the CGLA ``score`` calls alone."""
    check_seconds: float = 0.0
    """Time in the fast path's check (:mod:`~mmspubench.eval.scorer_check`)."""


def _conditions(
    model: VisionLanguageModel,
    items: Sequence[Item],
    cgla_variant: str = prompts.STANDARD,
    images: Sequence[Sequence[Any]] | None = None,
) -> list[tuple[tuple[Condition, ...], tuple[tuple[float, ...], ...]]]:
    """CGL conditions of each item, and the CGLs of the same conditions under each of the item's
    other ``images`` (the views' ``cgla_images``); every request of every item goes into one
    ``score`` call."""
    images = images if images is not None else [() for _ in items]
    plans, groups, owners = [], [], []
    for item, extra in zip(items, images, strict=True):
        continuation = prompts.cgla_continuation(item.class_name)
        plan = [(a, "core") for a in item.core_attributes] + [
            (a, "spurious") for a in item.spurious_attributes
        ]
        contexts = [model.render(prompts.cgla_prompt(attribute, cgla_variant)) for attribute, _ in plan]
        plans.append((plan, contexts, continuation))
        for image in [item.pil_image, *extra]:
            groups.append([ScoreRequest(image, context, continuation) for context in contexts])
            owners.append(item)
    scores = iter(asking.score_per_item(model, groups, owners, "CGL"))
    out = []
    for (plan, contexts, continuation), extra in zip(plans, images, strict=True):
        own = next(scores)
        conditions = tuple(
            Condition(attribute, kind, context, continuation, cgl)
            for (attribute, kind), context, cgl in zip(plan, contexts, own, strict=True)
        )
        out.append((conditions, tuple(tuple(next(scores)) for _ in extra)))
    return out


def _result(
    item: Item,
    published: asking.Reply | None,
    conditions: tuple[Condition, ...] | None,
    parts: dict[str, Any],
    config: RunConfig,
) -> SampleResult:
    cgla_min = cgla_acc = None
    if conditions is not None:
        cgla_min = metrics.cgla_min_of(
            [c.cgl for c in conditions], [c.kind for c in conditions], config.core_reduction
        )
        cgla_acc = metrics.cgla_acc(cgla_min)
    return SampleResult(
        id=item.id,
        types=item.spurious_types,
        answer=item.answer,
        prediction=None if published is None else published.prediction,
        correct=None if published is None else published.prediction == item.answer,
        raw_output=None if published is None else published.raw_output,
        option_scores=None if published is None else published.option_scores,
        class_name=item.class_name,
        conditions=conditions or (),
        cgla_min=cgla_min,
        cgla_acc=cgla_acc,
        **part_fields(parts),
        reading=None if published is None else published.reading,
    )


def _split(values: Sequence[Any], counts: Sequence[int]) -> list[tuple[Any, ...]]:
    """``values`` cut into consecutive runs of ``counts`` items."""
    out, first = [], 0
    for count in counts:
        out.append(tuple(values[first : first + count]))
        first += count
    return out


def evaluate_items(
    model: VisionLanguageModel,
    items: Sequence[Item],
    config: RunConfig,
    clock: Clock | None = None,
    judge: Judge | None = None,
) -> list[SampleResult]:
    """Score a small batch of items; results in input order.

    The published question of every item and every view's own asks (:mod:`mmspubench.eval.views`)
    go into one ``generate`` or ``score`` call, and the CGLA requests of all items (under the
    views' extra images too) into one ``score`` call, so a prefix-sharing scorer can share passes
    across items. Each view then takes its part of every sample from its replies. ``judge``
    (``--extract judge``) reads the generated answers the parser leaves unparsed.
    """
    clock = clock if clock is not None else Clock()
    views = registry.in_run(config)
    states = {v.name: None if v.prepare is None else v.prepare(items, config) for v in views}
    published: list[asking.Reply] = []
    own: dict[str, list[asking.Reply]] = {}
    if "accuracy" in config.metrics:
        start = time.perf_counter()
        for view in views:
            if view.check_model is not None:
                view.check_model(model, config)
        asks = asking.published_asks(items)
        spans = {}
        for view in views:
            if view.asks is not None:
                extra = view.asks(items, config, states[view.name])
                spans[view.name] = (len(asks), len(asks) + len(extra))
                asks += extra
        replies = asking.answers(model, asks, config, judge=judge)
        published = replies[: len(items)]
        own = {name: replies[first:last] for name, (first, last) in spans.items()}
        clock.accuracy_seconds += time.perf_counter() - start
    n = len(items)
    conditions: list[tuple[Condition, ...] | None] = [None] * n
    cgls: dict[str, list[tuple[tuple[float, ...], ...] | None]] = {v.name: [None] * n for v in views}
    if "cgla" in config.metrics:
        start = time.perf_counter()
        extra_of = {v.name: v.cgla_images(states[v.name]) for v in views if v.cgla_images is not None}
        images = [[image for per_item in extra_of.values() for image in per_item[i]] for i in range(n)]
        scored = _conditions(model, items, config.cgla_prompt_variant, images)
        conditions = [c for c, _ in scored]
        for i, (_, values) in enumerate(scored):
            counts = [len(per_item[i]) for per_item in extra_of.values()]
            for name, mine in zip(extra_of, _split(values, counts), strict=True):
                cgls[name][i] = mine
        clock.cgla_seconds += time.perf_counter() - start
    parts: list[dict[str, Any]] = [{} for _ in items]
    for view in views:
        if view.take is None or view.part is None:
            continue
        chunk = Chunk(
            items, published, own.get(view.name, []), states[view.name], conditions, cgls[view.name]
        )
        taken = list(view.take(chunk, config))
        if len(taken) != len(items):
            raise MMSpuBenchError(f"view {view.name!r} took {len(taken)} parts for {len(items)} items")
        for index, value in enumerate(taken):
            parts[index][view.part.key] = value
    return [
        _result(item, published[index] if published else None, conditions[index], parts[index], config)
        for index, item in enumerate(items)
    ]


def evaluate_item(model: VisionLanguageModel, item: Item, config: RunConfig) -> SampleResult:
    """Score one item (the Space's live evaluation uses this)."""
    return evaluate_items(model, [item], config)[0]


def _chunks(items: Iterator[Item], size: int) -> Iterator[list[Item]]:
    chunk: list[Item] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What one process of a run does."""

    out_dir: Path
    """The run folder."""
    ids: tuple[str, ...]
    """Every item id of the run, in dataset order."""
    todo: tuple[str, ...]
    """Ids this process evaluates (not yet finished, this process's shard)."""
    shard: distributed.Shard = field(default_factory=distributed.Shard)
    """This process's place among the run's processes."""
    stamp: str | None = None
    """The run's identity, written into every sample line (``run_stamp``)."""
    finished: int = 0
    """Items of the run scored before (by earlier parts, any process)."""
    earlier: tuple[SampleResult, ...] = ()
    """The samples of every samples file as the run opened the folder."""
    complete: int = 0
    """Byte length of the complete lines of this process's samples file when the run opened it."""


def plan_run(
    out_dir: Path, ids: Sequence[str], shard: distributed.Shard, earlier: Sequence[SampleResult] | None = None
) -> RunPlan:
    """Finished ids come from every samples file of the folder (``earlier``: their samples, when
    already read); the rest is split across processes."""
    done = {s.id for s in (distributed.all_samples(out_dir) if earlier is None else earlier)}
    remaining = [i for i in ids if i not in done]
    finished = len(ids) - len(remaining)
    return RunPlan(out_dir, tuple(ids), tuple(remaining[shard.rank :: shard.world]), shard, finished=finished)


def _model_identity(model: VisionLanguageModel) -> dict[str, Any]:
    """What a resumed run must match about the model: its identity, chat template and image settings
    (:func:`~mmspubench.eval.run_stamp.model_identity`; the scorer and the library versions may
    differ: speed, not figures)."""
    info = model.info
    settings = getattr(model, "environment", None) or {}
    return model_identity(
        {
            "id": info.id,
            "path": info.path,
            "revision": info.revision,
            "dtype": info.dtype,
            "adapter": info.adapter,
            **{key: settings[key] for key in MODEL_SETTING_KEYS if key in settings},
        }
    )


def _model_section(model: VisionLanguageModel, config: RunConfig) -> dict[str, Any]:
    """results.json's ``model``: the identity, the thinking mode where the engine reports one
    (:mod:`~mmspubench.eval.checkpoint.thinking`), the scorer the engine runs (the samples then say
    what ran, :func:`~mmspubench.eval.scorer_check.summary`), its fast path's check and, in generate
    mode, the reasoning style its replies were split by (only when not ``none``: ``submit``
    splits the raw outputs again by it)."""
    info = model.info
    path = getattr(model, "fast_path", None)
    settings = getattr(model, "environment", None) or {}
    style = asking.reasoning_style(model) if config.answer_mode == "generate" else "none"
    return {
        **_model_identity(model),
        **({"thinking": settings["thinking"]} if "thinking" in settings else {}),
        "scorer_used": info.scorer_used,
        "scorer_fallback_reason": info.scorer_fallback_reason,
        "scorer_check": None if path is None else {"path": path.name, "requested": config.scorer_check},
        **({} if style == "none" else {"reasoning_style": style}),
    }


def _progress(total: int, initial: int, shard: distributed.Shard, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    desc = "eval" if shard.world == 1 else f"eval [{shard.rank}/{shard.world}]"
    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="item",
        disable=not enabled,
        position=shard.rank,
        dynamic_ncols=True,
    )


def _evaluate_plan(
    model: VisionLanguageModel,
    dataset: datasets.Dataset,
    config: RunConfig,
    plan: RunPlan,
    clock: Clock,
    progress: bool,
    part: distributed.PartTiming | None = None,
    finished: int = 0,
    judge: Judge | None = None,
) -> list[SampleResult]:
    """Evaluate this process's items, appending each finished sample to its samples file; after
    each chunk, ``part`` records the time spent so far (an interrupted part's time counts in the
    run's timing). One process shows the whole run on its bar (``finished`` items done before).
    Returns the samples this process wrote."""
    one = plan.shard.world == 1
    bar = _progress(len(plan.ids) if one else len(plan.todo), finished if one else 0, plan.shard, progress)
    scorer = scorer_check.ChunkScorer(model, config.scorer_check)

    def evaluate(engine: VisionLanguageModel, items: Sequence[Item]) -> list[SampleResult]:
        return evaluate_items(engine, items, config, clock, judge=judge)

    try:
        path = distributed.samples_path(plan.out_dir, plan.shard)
        with results.SampleWriter(path, plan.stamp, plan.complete) as writer:
            for chunk in _chunks(data.iter_items(dataset, plan.todo, config.dataset), config.batch_size):
                for sample in scorer.run(chunk, evaluate):
                    writer.write(sample)
                bar.update(len(chunk))
                if part is not None:
                    part.write(clock, scorer.check_seconds, len(chunk))
    finally:
        bar.close()  # ends the bar's line, also on Ctrl-C: what follows starts on its own
    clock.check_seconds += scorer.check_seconds
    return writer.written


def run_eval(
    load: Callable[[], VisionLanguageModel],
    dataset: datasets.Dataset,
    dataset_info: dict[str, Any],
    config: RunConfig,
    out_dir: Path | run_folder.CheckedOut,
    *,
    shard: distributed.Shard | None = None,
    progress: bool = True,
    notify: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """Evaluate (or resume) a run into ``out_dir``; returns results.json's object on the main process.

    ``load`` builds the model, so that loading is timed and happens only after the folder was
    checked. With several processes (``shard.world > 1``) each writes its own shard file and the
    main process merges them; the other processes return ``None``. A failure before the first item
    finished leaves no run behind (:func:`~mmspubench.eval.run_folder.removed_if_unstarted`); a
    rerun of a finished run leaves its results.json as it was and says so through ``notify``.
    """
    shard = shard if shard is not None else distributed.Shard()
    # The API checked ``--out`` before loading the data (a CheckedOut); a plain path is checked here.
    checked = out_dir if isinstance(out_dir, run_folder.CheckedOut) else run_folder.check_out_dir(out_dir)
    folder = checked.path
    try:
        with (
            run_folder.removed_if_unstarted(folder, shard.is_main),
            run_folder.exclusive(folder, shard.rank),
        ):
            return _run_eval(load, dataset, dataset_info, config, folder, shard, progress, notify)
    except KeyboardInterrupt:
        raise Interrupted(_kept_note(folder)) from None


def _kept_note(out_dir: Path) -> str:
    """What an interrupted run left: the items kept and the rerun that resumes, or nothing kept."""
    if not out_dir.is_dir():
        return f"no item had finished, so nothing was kept ({out_dir} was removed)"
    try:
        kept = len({s.id for s in distributed.all_samples(out_dir)})
    except (MMSpuBenchError, OSError):  # a line cut by the interrupt: the rerun names it
        return f"rerun the same command (same --out {out_dir}) to resume"
    return f"{kept} finished item(s) are kept in {out_dir}; rerun the same command (same --out) to resume"


def _check_items(dataset: datasets.Dataset, config: RunConfig, n: int) -> None:
    """Every image of the run's ``n`` items decoded once, then each view's checks of the records:
    before the model loads, as a bad record met in a later chunk would stop the run half-written. (A
    finished run's rerun skips them: its samples, stamped with this dataset, were made from them.)"""
    where = str(config.dataset)
    data.check_images(dataset, n, where)  # the views' checks read the image headers
    for view in registry.in_run(config):
        if view.check_dataset is not None:
            view.check_dataset(dataset, config, where)


def _plan(opened: run_folder.OpenedRun, ids: Sequence[str], shard: distributed.Shard, stamp: str) -> RunPlan:
    """This process's plan from the folder as the run opened it: every line stamped by this run
    (``stamp``), the finished items taken from its samples."""
    for file in opened.samples_files:
        check_stamps(file.path, stamp, file.lines)
    earlier = [s for f in opened.samples_files for s in results.samples_of_lines(f.lines, f.path)[0]]
    return replace(
        plan_run(opened.out_dir, ids, shard, earlier),
        stamp=stamp,
        earlier=tuple(earlier),
        complete=opened.complete_bytes(distributed.samples_path(opened.out_dir, shard)),
    )


def _run_eval(
    load: Callable[[], VisionLanguageModel],
    dataset: datasets.Dataset,
    dataset_info: dict[str, Any],
    config: RunConfig,
    out_dir: Path,
    shard: distributed.Shard,
    progress: bool,
    notify: Callable[[str], None] | None,
) -> dict[str, Any] | None:
    start = time.perf_counter()
    data.check_columns(dataset, config.dataset)
    ids = data.item_ids(dataset, config.limit)
    if not ids:
        raise MMSpuBenchError(f"{config.dataset}: split {config.split!r} has no items")
    # The whole split's size and ids (not only the --limit ones): submit checks them.
    dataset_info = {**dataset_info, **split_identity(data.item_ids(dataset, None))}
    opened = run_folder.open_run(out_dir)  # the folder's files, read once
    run_folder.check_resume(opened, config, dataset_info)
    kept = run_folder.finished_without_loading(opened, ids, config, dataset_info, shard.world)
    if kept is not None:
        if notify is not None:
            notify(run_folder.finished_note(out_dir, kept))
        return kept
    _check_items(dataset, config, len(ids))
    # after the finished-rerun shortcut (a finished run never asks the judge), before the model
    # loads (a judge that is down stops the run before anything is written)
    judge = judge_for(config)
    model = load()
    load_seconds = time.perf_counter() - start
    model_identity = _model_identity(model)
    results.check_held_manifest(out_dir, opened.has_manifest, opened.manifest, "model", model_identity)
    if shard.is_main:
        results.write_manifest(
            out_dir, {"config": config.identity(), "dataset": dataset_info, "model": model_identity}
        )
    plan = _plan(opened, ids, shard, run_stamp(config.identity(), dataset_info, model_identity))
    finished = plan.finished
    if 0 < finished < len(ids) and shard.is_main and notify is not None:
        rest = len(ids) - finished
        notify(
            f"resuming {out_dir}: {finished} of {len(ids)} items were scored before; scoring the other {rest}"
        )
    distributed.barrier(shard)  # every process has planned before anyone appends a sample
    part = distributed.PartTiming(out_dir, shard, load_seconds, start)
    clock = Clock()
    written = _evaluate_plan(model, dataset, config, plan, clock, progress, part, finished, judge)
    part.write(clock)
    distributed.barrier(shard)  # every shard is complete on disk
    if not shard.is_main:
        return None
    out, unchanged = _finish(
        replace(plan, earlier=(*plan.earlier, *written)),
        opened.results,
        config,
        _model_section(model, config),
        dataset_info,
        start - part.earlier_seconds,  # the run's time counts its earlier parts
        backends.describe(model),
        environment.describe(model, getattr(model, "device_name", None) or config.device),
    )
    if unchanged and notify is not None:
        notify(run_folder.finished_note(out_dir, out))
    return out


def _finish(
    plan: RunPlan,
    old_results: dict[str, Any] | None,
    config: RunConfig,
    model_section: dict[str, Any],
    dataset_info: dict[str, Any],
    start: float,
    backend: dict[str, Any] | None = None,
    env: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    """Main process: merge the samples files, write results.json, remove the shard files.

    Returns the results and whether they were left as they were: a rerun that scored nothing and
    reproduces the folder's results.json (``old_results``, as the run opened it) exactly keeps it
    (its timing and ``created_at`` too). ``plan.earlier`` holds the folder's samples and this
    process's; only the other processes' files are read.
    """
    merged = distributed.merge(plan.out_dir, plan.ids, plan.stamp, plan.earlier, plan.shard)
    timing = distributed.merged_timing(plan.out_dir, plan.shard.world)
    timing["total_seconds"] = time.perf_counter() - start
    out = results.build_results(config, model_section, dataset_info, merged, plan.ids, timing, backend, env)
    kept = (
        None
        if timing.get("items_scored")
        else run_folder.unchanged_results(old_results, out, config.identity())
    )
    if kept is None:
        results.write_json_atomic(plan.out_dir / results.RESULTS_NAME, out)
    distributed.cleanup(plan.out_dir)
    return (out, False) if kept is None else (kept, True)
