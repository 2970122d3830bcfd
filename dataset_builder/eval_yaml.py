"""``eval.yaml``: registers the built dataset as a benchmark for the Hub's evaluation results.

Model repos then report scores in ``.eval_results/*.yaml`` entries whose ``dataset.task_id`` is
one of the task ids declared here (``mmspubench submit`` writes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

BENCHMARK_NAME = "MM-SpuBench"
EVALUATION_FRAMEWORK = "mm-spubench"


@dataclass(frozen=True, slots=True)
class EvalTask:
    """One scored task of the benchmark."""

    id: str
    """Task id that ``.eval_results`` entries refer to."""
    description: str
    """What the score measures, in one sentence."""
    config: str = "default"
    """Dataset config the task reads."""
    split: str = "test"
    """Dataset split the task reads."""


TASKS: tuple[EvalTask, ...] = (
    EvalTask(
        "mcq_accuracy",
        "Multiple-choice accuracy (%) over all items: the chosen option letter equals the answer.",
    ),
    EvalTask(
        "cgla_accuracy",
        "CGLA accuracy (%): share of items whose class name is more likely given the best core attribute "
        "than given any spurious attribute (CGLA_min > 0).",
    ),
)
"""The tasks every result file reports."""

DESCRIPTION = (
    "MM-SpuBench measures the reliance of multimodal LLMs on spurious correlations across nine "
    "types (background, texture/noise, co-occurring objects, relative size, colorization, "
    "orientation, lighting/shadows, perspective/angle, shape), with multiple-choice accuracy and "
    "the Conditional Generation Likelihood Advantage (CGLA)."
)


def eval_yaml_dict() -> dict[str, Any]:
    """The content of ``eval.yaml`` as plain data."""
    return {
        "name": BENCHMARK_NAME,
        "description": DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [
            {"id": t.id, "description": t.description, "config": t.config, "split": t.split} for t in TASKS
        ],
    }


def render_eval_yaml() -> str:
    """The text of ``eval.yaml``."""
    return yaml.safe_dump(eval_yaml_dict(), sort_keys=False, allow_unicode=True, width=100)
