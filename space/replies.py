"""What the Space shows of a generate-mode run's replies: the leaderboard's ``Tokens`` column and
thinking mark, and Explore's reply of an item with its reasoning folded under it.

Read from what the run recorded only (results.json's ``replies`` and ``model.thinking``,
samples.jsonl's ``reasoning``, ``answer_text``, ``truncated``, ``read_by`` and ``tokens``:
:mod:`mmspubench.eval.replies.summary`, :mod:`mmspubench.eval.replies.record`); a run without
them (a ``logprob`` run, a run written before they existed) shows what it showed before.

**The thinking mark.** A run is marked ``thinking`` (in the leaderboard's Mode column) when its
results.json records ``model.thinking.mode: on``, or its ``replies`` section counts a reply cut
inside its reasoning (``truncated`` > 0) or reasoning tokens (``tokens.reasoning.total`` > 0), or,
where its samples.jsonl is read (the Space re-checks the samples of every run it shows), the
published answer of one of its samples records a non-empty ``reasoning``. Nothing else marks a
run: not its model's name, not ``model.reasoning_style`` (the style its replies were split by, which
a run with thinking off records too), not ``--thinking`` as asked (``config.thinking``; the model's
``mode`` is what it did).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.eval.views.confounds.cells import fixed
from mmspubench.markup import code_block, escape_cell

if TYPE_CHECKING:
    from mmspubench.eval.records import SampleResult
    from mmspubench.eval.results_file import Results

TOKENS = "Tokens"
"""The leaderboard's column of mean output tokens per reply (results.json
``replies.tokens.completion.mean``: the tokens each reply generated, reasoning included, over the
replies whose engine counted them), as ``report``'s ``Tokens`` column; empty for a run without it."""
THINKING = "thinking"
"""The mark of a thinking run in the leaderboard's Mode column (module doc)."""
READ_BY: dict[str, str] = {
    "parser": "the parser",
    "judge": "the judge (`--extract judge`)",
    "none": "neither (no option read: counted wrong)",
}
"""How Explore names each path that read an answer (``read_by``)."""
SHOWN_REASONING = 20_000
"""The most characters of a reply's reasoning Explore shows (a long one is cut, with a note: the
whole stays in samples.jsonl); a page holds many replies."""
SHOWN_ANSWER = 2_000
"""The most characters of a reply's answer text Explore shows (cut likewise)."""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def tokens_cell(results: Results) -> float:
    """The run's :data:`TOKENS` figure; NaN without a ``replies`` section or a counted completion."""
    mean = _mapping(_mapping(_mapping(results.replies).get("tokens")).get("completion")).get("mean")
    if isinstance(mean, bool) or not isinstance(mean, (int, float)) or not math.isfinite(mean):
        return math.nan
    return float(mean)


def tokens_text(value: float) -> str:
    """A :data:`TOKENS` cell as the page shows it: one decimal, as ``report`` shows it."""
    return fixed(value, 1)


def thinks(results: Results) -> bool:
    """Whether results.json alone marks the run as thinking (module doc)."""
    thinking = _mapping(results.model.get("thinking") if results.model is not None else None)
    if thinking.get("mode") == "on":
        return True
    replies = _mapping(results.replies)
    reasoning = _mapping(_mapping(replies.get("tokens")).get("reasoning"))
    return bool(_count(replies.get("truncated"))) or bool(_count(reasoning.get("total")))


def replies_reason(samples: Sequence[SampleResult]) -> bool:
    """Whether the published answer of one of ``samples`` records a non-empty ``reasoning``."""
    return any(s.reading is not None and (s.reading.reasoning or "").strip() for s in samples)


def _tokens(record: Mapping[str, Any], kind: str) -> int | None:
    return _count(_mapping(record.get("tokens")).get(kind))


def _answer_line(record: Mapping[str, Any]) -> str:
    letter = record.get("prediction")
    verdict = "right" if record.get("correct") is True else "wrong"
    answer = f"{letter} ({verdict})" if isinstance(letter, str) and letter in ANSWER_LETTERS else verdict
    read_by = record.get("read_by")
    line = f"**The run's reply:** {answer} · read by {READ_BY.get(str(read_by), 'a path not recorded')}"
    completion = _tokens(record, "completion")
    if completion is not None:
        line += f" · {completion} output tokens"
    if record.get("truncated") is True:
        line += " · **truncated**: cut inside its reasoning by the token budget, never read"
    return line


def reply_markdown(record: Mapping[str, Any]) -> str:
    """A sample's generated reply (a samples.jsonl record) with its reasoning folded under it: the
    answer, the path that read it (``read_by``), the ``truncated`` mark, the answer text read and
    the reasoning in a collapsed ``<details>`` block, every text of the run's shown as text (the
    reasoning in a code block: nothing in it closes the block or is markup); empty for a record
    without ``reasoning``, which Explore shows as before."""
    reasoning = record.get("reasoning")
    if not isinstance(reasoning, str):
        return ""
    raw = record.get("raw_output")
    text = record.get("answer_text", raw.strip() if isinstance(raw, str) else "")
    read = _cut(text, SHOWN_ANSWER) if isinstance(text, str) and text.strip() else "(none)"
    counted = _tokens(record, "reasoning")
    summary = f"Reasoning ({counted} tokens)" if counted is not None else "Reasoning"
    shown = code_block(reasoning[:SHOWN_REASONING])
    if len(reasoning) > SHOWN_REASONING:
        shown += f"\n\n(the first {SHOWN_REASONING:,} of {len(reasoning):,} characters; the whole is in samples.jsonl)"
    return (
        f"{_answer_line(record)}\n\n**Answer text read:** {read}\n\n"
        f"<details><summary>{summary}</summary>\n\n{shown}\n\n</details>"
    )


def _cut(text: str, limit: int) -> str:
    """``text`` as one escaped line, cut to ``limit`` characters with a note."""
    if len(text) <= limit:
        return escape_cell(text)
    return f"{escape_cell(text[:limit])}… (the first {limit:,} of {len(text):,} characters)"


NO_CGLA = (
    "**No CGL chart:** this run recorded no CGLA (an accuracy-only run, `eval --metrics accuracy`); "
    "its reply to the item is below."
)
"""What Explore's CGL panel says of a thinking run offered for its replies only."""


def replies_reading(record: Mapping[str, Any]) -> str | None:
    """Explore's reading of a record without CGLA conditions that has a reply with reasoning:
    :data:`NO_CGLA` and :func:`reply_markdown`; ``None`` for any other record (shown as before)."""
    if record.get("conditions"):
        return None
    reply = reply_markdown(record)
    return f"{NO_CGLA}\n\n{reply}" if reply else None


def with_reply(text: str, record: Mapping[str, Any]) -> str:
    """``text`` (Explore's reading of a run's record) with :func:`reply_markdown` after it, when the
    record has one."""
    reply = reply_markdown(record)
    return f"{text}\n\n{reply}" if reply else text
