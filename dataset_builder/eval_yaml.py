"""``eval.yaml``: registers the built dataset as a benchmark for the Hub's evaluation results.

Model repos then report scores in ``.eval_results/*.yaml`` entries whose ``dataset.task_id`` is
one of the task ids declared here (``mmspubench submit`` writes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import yaml

BENCHMARK_NAME = "MM-SpuBench"
EVALUATION_FRAMEWORK = "inspect-ai"
"""One of the frameworks the Hub accepts (huggingface.js ``packages/tasks/src/eval.ts``); its Eval
Results and "verified" runs are built on inspect-ai's Hub task loader (``inspect_ai/_eval/task/hf.py``)."""
INSPECT_CONFIG = "inspect"
"""The dataset config inspect-ai reads: the same rows with the image as a ``data:image/...;base64,``
string (its loader takes only string images) and the answer as a letter."""
INSPECT_METADATA: tuple[str, ...] = (
    "class_name",
    "core_attributes",
    "spurious_attributes",
    "spurious_types",
    "source",
)
"""Columns of the ``inspect`` config kept as each sample's metadata."""
Scale = Literal["fraction", "percent"]


@dataclass(frozen=True, slots=True)
class EvalTask:
    """One task of ``eval.yaml``: what inspect-ai runs and what ``.eval_results`` entries refer to."""

    id: str
    """Task id that ``.eval_results`` entries refer to."""
    description: str
    """What the score measures, in one sentence (in the benchmark's description: inspect-ai's task
    schema allows no extra keys)."""
    scale: Scale = "fraction"
    """Scale of the entry's value: ``fraction`` in [0, 1], as inspect-ai's ``accuracy`` reports."""
    config: str = INSPECT_CONFIG
    """Dataset config the task reads."""
    split: str = "test"
    """Dataset split the task reads."""
    image: bool = True
    """The sample shows the item's image; ``False``: the text-only (blind) task, same question and options."""


TASKS: tuple[EvalTask, ...] = (
    EvalTask(
        "mcq_accuracy",
        "Multiple-choice accuracy over all items, as a fraction in [0, 1]: the chosen option letter "
        "equals the answer.",
    ),
    EvalTask(
        "blind_accuracy",
        "The same multiple-choice accuracy with the question and options only, no image, as a fraction "
        "in [0, 1]: how much a text prior answers without looking.",
        image=False,
    ),
)
"""The tasks of eval.yaml. CGLA needs the log-likelihoods of class names under conditioned prompts,
which inspect-ai's fixed solvers and scorers cannot compute, and inspect-ai validates every task
before it filters, so CGLA stays in results.json, the Space and the results dataset. So does the
circular accuracy: its rule (an item right only when all four rotations are) groups four samples
into one score, which no fixed inspect-ai scorer does (``multiple_choice``'s shuffle is random, not
the four cyclic rotations). The blind accuracy is the same task without ``input_image``."""

DESCRIPTION = (
    "MM-SpuBench measures the reliance of multimodal LLMs on spurious correlations across nine "
    "types (background, texture/noise, co-occurring objects, relative size, colorization, "
    "orientation, lighting/shadows, perspective/angle, shape), with multiple-choice accuracy and "
    "the Conditional Generation Likelihood Advantage (CGLA; computed by `mmspubench eval`, not a task "
    "here). Tasks: " + " ".join(f"`{t.id}`: {t.description}" for t in TASKS)
)


def task_dict(task: EvalTask) -> dict[str, Any]:
    """One task as inspect-ai's ``HFTask`` reads it."""
    image = {"input_image": "image"} if task.image else {}
    return {
        "id": task.id,
        "config": task.config,
        "split": task.split,
        "field_spec": {
            "id": "id",
            "input": "question",
            **image,
            "target": "answer",
            "choices": "options",
            "metadata": list(INSPECT_METADATA),
        },
        "solvers": [{"name": "multiple_choice"}],
        "scorers": [{"name": "choice"}],
    }


def eval_yaml_dict() -> dict[str, Any]:
    """The content of ``eval.yaml`` as plain data."""
    return {
        "name": BENCHMARK_NAME,
        "description": DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [task_dict(t) for t in TASKS],
    }


def render_eval_yaml() -> str:
    """The text of ``eval.yaml``."""
    return yaml.safe_dump(eval_yaml_dict(), sort_keys=False, allow_unicode=True, width=100)
