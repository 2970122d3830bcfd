"""Generate-mode runs of the fixture items whose replies carry reasoning, written with eval's own
writers (results.json's ``replies`` section recomputed from the samples), for the tests of what the
Space shows of thinking runs.

Each item's reply is the server's: ``reasoning`` apart from the answer, tokens counted. The
completion tokens of the three items are :data:`COMPLETIONS` (mean 21.0 by hand).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.load import load_pinned
from mmspubench.dataset_builder.schema import Item
from mmspubench.dataset_builder.split_ids import split_identity
from mmspubench.eval import metrics
from mmspubench.eval.config import RunConfig
from mmspubench.eval.data import row_to_item
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.record import ReplyReading, Tokens

from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder
from tests.space.release_runs import made_up_conditions

REASONING = "Maybe <script>alert(1)</script> A.\n</details>\n\n**No**: [it](https://evil.example) is B."
"""Each reply's reasoning: markup and a closing ``</details>`` that must stay text."""
COMPLETIONS = (12, 20, 31)
"""Completion tokens of the replies to the three fixture items; their mean is 21.0."""
REASONING_TOKENS = (9, 15, 25)
"""Of them, the reasoning's."""
THINKING_ON = {"mode": "on", "set_by": "chat_template_kwargs:enable_thinking", "scored_rendering": "none"}
"""results.json ``model.thinking`` of a run with thinking on."""


def _sample(item: Item, k: int, reasoning: bool, reasoning_tokens: bool) -> SampleResult:
    conditions, value = made_up_conditions(item)
    tokens = Tokens(40, COMPLETIONS[k], REASONING_TOKENS[k] if reasoning_tokens else None)
    reading = ReplyReading(
        item.answer, "parser", REASONING if reasoning else None, tokens=tokens, seconds=None
    )
    return SampleResult(
        id=item.id,
        types=item.spurious_types,
        answer=item.answer,
        prediction=item.answer,
        correct=True,
        raw_output=item.answer,
        option_scores=None,
        class_name=item.class_name,
        conditions=conditions,
        cgla_min=value,
        cgla_acc=metrics.cgla_acc(value),
        reading=reading,
    )


def write_generate_run(
    root: Path,
    name: str,
    release: Path,
    model: str,
    *,
    reasoning: bool = True,
    reasoning_tokens: bool = True,
    thinking: Mapping[str, Any] | None = None,
    metrics: tuple[str, ...] = ("accuracy", "cgla"),
) -> Path:
    """A finished generate-mode run ``root/name`` of ``model`` on ``release`` (every item right, CGLA
    recorded): replies with :data:`REASONING` (``reasoning=False``: none), their reasoning tokens
    counted (``reasoning_tokens``), and ``model.thinking`` when ``thinking`` is given; ``metrics``
    without ``cgla``: no conditions recorded (``eval --metrics accuracy``)."""
    dataset, identity = load_pinned(release)
    items = [row_to_item(row, str(release)) for row in dataset]
    samples = [_sample(item, k, reasoning, reasoning_tokens) for k, item in enumerate(items)]
    if "cgla" not in metrics:
        samples = [replace(s, conditions=(), cgla_min=None, cgla_acc=None) for s in samples]
    config = RunConfig(
        model=model,
        dataset=str(release),
        prompts=prompt_spec(),
        answer_mode="generate",
        metrics=metrics,
    )
    info = {**identity, **split_identity([s.id for s in samples])}
    ident = model_identity(model, **({} if thinking is None else {"thinking": dict(thinking)}))
    return write_run_folder(root / name, config, samples, info, ident)
