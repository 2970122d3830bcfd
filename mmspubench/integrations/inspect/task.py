"""The Inspect AI task ``mmspubench/mm_spubench``: MM-SpuBench's multiple-choice accuracy.

Run it with ``inspect eval mmspubench/mm_spubench --model mmspubench/bundled -T dataset=...``
(from any folder but the repository root, where ``mmspubench/`` is a folder of task files to
Inspect). The samples are our items (sample id = item id) with our prompt: the system turn, then
one user turn holding the image first and the multiple-choice text of ``mmspubench eval``. The
solver asks for one greedy answer, reads it with our parser (``mmspubench.eval.replies.parse``)
from the text after the model's reasoning only, as eval reads it (``inspect.replies``: Inspect's
``ContentReasoning`` apart, inline markers split off, a reply cut inside its reasoning never read),
and marks that choice, so Inspect's ``choice`` scorer scores what ``mmspubench eval`` scores. Inspect's own
``multiple_choice`` solver is not used: it writes options as ``A) text`` and reads only
``ANSWER: X``, so its prompt and its answers would differ from ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentImage, ContentText
from inspect_ai.scorer import Metric, SampleScore, accuracy, choice, metric, value_to_float
from inspect_ai.solver import Generate, Solver, TaskState, solver
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics as our_metrics
from mmspubench.eval import prompts
from mmspubench.integrations.inspect import interventions as inspect_interventions
from mmspubench.integrations.inspect import views as inspect_views
from mmspubench.integrations.inspect.args import (
    TaskOptionError,
    check_interventions,
    check_task_args,
    check_views,
)
from mmspubench.integrations.inspect.replies import output_reasoning, read_inspect_reply
from mmspubench.integrations.items import Split, SplitItem, load_split
from mmspubench.redact import clean

TASK_NAME = "mmspubench/mm_spubench"
"""The task's registry name (explicit: an editable install has no distribution prefix)."""
DEFAULT_MAX_TOKENS = 16
"""Answer length of the standard prompt, as ``mmspubench eval``'s ``--max-new-tokens`` default
(a variant that reasons first takes its own, ``PromptVariant.max_new_tokens``)."""


def to_sample(split_item: SplitItem, variant_name: str = prompts.STANDARD) -> Sample:
    """One item as an Inspect ``Sample``: the variant's system turn, then image + its
    multiple-choice text (the standard variant: ``mmspubench eval``'s own prompt)."""
    item = split_item.item
    chosen = prompts.variant(variant_name)
    text = prompts.mcq_prompt(
        item.question, item.options, "generate", variant_name, core_attributes=item.core_attributes
    ).user_text
    user = ChatMessageUser(content=[ContentImage(image=split_item.data_uri), ContentText(text=text)])
    return Sample(
        id=item.id,
        input=[ChatMessageSystem(content=chosen.system), user],
        choices=list(item.options),
        target=item.answer,
        metadata={"types": list(item.spurious_types), "class_name": item.class_name},
    )


@solver
def mcq_answer(max_tokens: int = DEFAULT_MAX_TOKENS, final_answer: bool = False) -> Solver:
    """One greedy answer, read by ``mmspubench.eval.replies.parse.parse_answer`` (``parse_final_answer`` for
    a variant that reasons first) from the text after the reasoning (``inspect.replies``); the named
    choice is marked."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await generate(state, max_tokens=max_tokens, temperature=0.0)
        options = [c.value for c in state.choices]
        output = state.output
        reasoning = output_reasoning(output)
        _, reading = read_inspect_reply(
            output.completion, reasoning, output.stop_reason, options, final_answer
        )
        letter = reading.prediction
        for index in range(len(options)):
            state.choices.mark_choice(index, ANSWER_LETTERS[index] == letter)
        return state

    return solve


def _scored(scores: Sequence[SampleScore]) -> list[our_metrics.Scored]:
    to_float, out = value_to_float(), []
    for sample_score in filter(inspect_views.is_published, scores):
        types = tuple((sample_score.sample_metadata or {}).get("types") or ())
        value = 1.0 if to_float(sample_score.score.value) == 1.0 else 0.0
        out.append(our_metrics.Scored(types, value))
    return out


@metric
def type_accuracy() -> Metric:
    """Table 2's figures in percent: ``overall``, ``average`` (mean over types with items) and one
    per type abbreviation (an item of two types counts in both; types without items left out),
    over the published order of each item (not its rotations or its blind view).
    Over no published scores (Inspect asks while samples run): no figures, reported as NaN."""

    def compute(scores: list[SampleScore]) -> Any:
        scored = _scored(scores)
        if not scored:
            return {}
        summary = our_metrics.accuracy_summary(scored, 0, 0)
        by_type = {k: v for k, v in summary["by_type"].items() if v is not None}
        return {"overall": summary["overall"], "average": summary["average"], **by_type}

    return compute


@task(name=TASK_NAME)
def mm_spubench(
    dataset: str | None = None,
    revision: str | None = None,
    split: str = "test",
    prompt_variant: str = "standard",
    limit: int | None = None,
    max_tokens: int | None = None,
    circular: bool = False,
    blind: bool = False,
    blind_image: str = "none",
    interventions: str | list[str] | None = None,
) -> Task:
    """MM-SpuBench accuracy. ``dataset``: a Hub id (at ``revision``), a built folder or a raw
    release, as ``mmspubench eval --dataset`` (default: the bundled release). ``circular``: each
    item also in its rotations 1-3, ``blind``: also without the image (``blind_image`` ``grey``: a
    mid-grey image), as ``mmspubench eval --metrics accuracy,circular,blind`` (``inspect.views``).
    ``interventions``: each item also asked under each named intervention (``grayscale,blur``,
    ``cf:NAME``, ``cf:*``), as ``--metrics ...,interventions --interventions`` (``inspect.interventions``).
    Every option is checked as ``mmspubench eval`` checks its flag, before anything is read; a bad
    one is one line."""
    try:
        given: dict[str, Any] = {"dataset": dataset, "revision": revision, "split": split}
        given.update({"prompt_variant": prompt_variant, "limit": limit, "max_tokens": max_tokens})
        check_task_args({**given, "blind_image": blind_image})
        check_views(circular, blind, blind_image)
        views = Views(circular, blind, blind_image, check_interventions(interventions))
        return _task(dataset, revision, split, prompt_variant, limit, max_tokens, views)
    except MMSpuBenchError as err:
        raise TaskOptionError(clean(" ".join(str(err).split()))) from None


@dataclass(frozen=True, slots=True)
class Views:
    """The confound views asked for (``-T circular``, ``-T blind``, ``-T blind_image``)."""

    circular: bool
    blind: bool
    blind_image: str
    interventions: tuple[str, ...] = ()
    """The interventions asked (``-T interventions``), checked; empty: none."""

    @property
    def any(self) -> bool:
        """Whether any view beyond the published order is asked for."""
        return self.circular or self.blind or bool(self.interventions)


def _samples(loaded: Split, prompt_variant: str, views: Views, where: str) -> list[Sample]:
    if not views.any:
        return [to_sample(s, prompt_variant) for s in loaded.items]
    if views.interventions:
        inspect_interventions.check_split(loaded, views.interventions, where)
    out = []
    for s in loaded.items:
        out += inspect_views.item_samples(s, prompt_variant, views.circular, views.blind, views.blind_image)
        if views.interventions:
            out += inspect_interventions.intervention_samples(s, prompt_variant, views.interventions, where)
    return out


def _metrics(views: Views) -> list[Metric | dict[str, list[Metric]]]:
    if not views.any:
        return [accuracy(), type_accuracy()]
    chosen: list[Metric | dict[str, list[Metric]]] = [type_accuracy()]
    if views.circular:
        chosen.append(inspect_views.circular_figures())
    if views.blind:
        chosen.append(inspect_views.blind_figures())
    if views.interventions:
        chosen.append(inspect_interventions.intervention_figures())
    return chosen


def _task(
    dataset: str | None,
    revision: str | None,
    split: str,
    prompt_variant: str,
    limit: int | None,
    max_tokens: int | None,
    views: Views,
) -> Task:
    chosen = prompts.variant(prompt_variant)
    loaded = load_split(dataset, revision, split, limit)
    where = str(dataset or "bundled")
    return Task(
        dataset=MemoryDataset(
            _samples(loaded, prompt_variant, views, where), name="mm_spubench", location=where
        ),
        solver=mcq_answer(max_tokens or chosen.max_new_tokens, chosen.final_answer),
        scorer=choice(),
        metrics=_metrics(views),
        metadata={
            "mmspubench_dataset": loaded.identity,
            "prompt_version": prompts.PROMPT_VERSION,
            "prompt_variant": chosen.name,
            "prompt_variant_version": chosen.version,
            "ceiling": chosen.ceiling,
        },
    )
