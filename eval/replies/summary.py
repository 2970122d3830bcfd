"""results.json's ``replies`` section: how a generate-mode run's answers were read, and their cost.

Written only in ``generate`` mode (with ``accuracy``), from the published question's reply of
each item (the views' own asks are not counted), and recomputed from samples.jsonl wherever a
run's figures are checked (``submit``, the Space):

- ``n``: replies; ``parsed`` (read by the parser), ``judged`` (read by the judge), ``unparsed``
  (read by neither, not truncated) and ``truncated`` (cut inside the reasoning, never read);
  they sum to ``n``.
- ``share``: percent of ``n`` read by each path (``parser``, ``judge``, ``none``: unparsed and
  truncated together) and ``truncated`` apart.
- ``tokens``: per kind (``prompt``, ``completion``, ``reasoning``) ``{total, mean, counted}`` over
  the replies whose engine counted that kind (``counted`` of them), or ``null`` where none did.
- ``tokens_per_correct``: completion tokens of all replies over the correct answers; ``null``
  when some reply's completion was not counted or no answer is correct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.replies.record import TOKEN_KEYS

if TYPE_CHECKING:
    from mmspubench.eval.records import SampleResult

SECTION = "replies"
"""The section's key in results.json."""
COUNTS = ("n", "parsed", "judged", "unparsed", "truncated")
"""The section's counts (module doc)."""
SHARES = ("parser", "judge", "none", "truncated")
"""The keys of ``share``."""
KEYS = (*COUNTS, "share", "tokens", "tokens_per_correct")
"""The section's keys, in order."""


def replies_section(samples: Sequence[SampleResult]) -> dict[str, Any] | None:
    """The section of ``samples`` (module doc); ``None`` without a generated answer."""
    from mmspubench.eval.records import reading_of

    readings = [(s, r) for s in samples if (r := reading_of(s)) is not None]
    if not readings:
        return None
    n = len(readings)
    truncated = sum(r.truncated for _, r in readings)
    counts = {
        "n": n,
        "parsed": sum(r.read_by == "parser" for _, r in readings),
        "judged": sum(r.read_by == "judge" for _, r in readings),
        "unparsed": sum(r.read_by == "none" and not r.truncated for _, r in readings),
        "truncated": truncated,
    }
    share = {
        "parser": 100.0 * counts["parsed"] / n,
        "judge": 100.0 * counts["judged"] / n,
        "none": 100.0 * (counts["unparsed"] + truncated) / n,
        "truncated": 100.0 * truncated / n,
    }
    tokens: dict[str, Any] = {}
    for kind in TOKEN_KEYS:
        found = [getattr(r.tokens, kind) for _, r in readings if r.tokens is not None]
        values = [v for v in found if v is not None]
        tokens[kind] = (
            {"total": sum(values), "mean": sum(values) / len(values), "counted": len(values)}
            if values
            else None
        )
    correct = sum(bool(s.correct) for s, _ in readings)
    completion = tokens["completion"]
    per_correct = (
        completion["total"] / correct
        if completion is not None and completion["counted"] == n and correct
        else None
    )
    return {**counts, "share": share, "tokens": tokens, "tokens_per_correct": per_correct}


def check_section(value: Any, where: str) -> Mapping[str, Any] | None:
    """A ``replies`` section as written, checked once where results.json is read: its keys, its
    counts (summing to ``n``), shares and token figures; one line naming ``where`` and the field."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != set(KEYS):
        raise MMSpuBenchError(f"{where}: field {SECTION!r} must be an object with keys {', '.join(KEYS)}")
    for key in COUNTS:
        if not _count(value[key]):
            raise MMSpuBenchError(f"{where}: field '{SECTION}.{key}' must be a count, got {value[key]!r}")
    if sum(value[k] for k in COUNTS[1:]) != value["n"]:
        raise MMSpuBenchError(
            f"{where}: field '{SECTION}.n': parsed, judged, unparsed and truncated do not sum to it"
        )
    share = value["share"]
    if (
        not isinstance(share, Mapping)
        or set(share) != set(SHARES)
        or not all(_percent(share[k]) for k in SHARES)
    ):
        raise MMSpuBenchError(f"{where}: field '{SECTION}.share' must give {', '.join(SHARES)} in percent")
    tokens = value["tokens"]
    if not isinstance(tokens, Mapping) or set(tokens) != set(TOKEN_KEYS):
        raise MMSpuBenchError(f"{where}: field '{SECTION}.tokens' must give {', '.join(TOKEN_KEYS)}")
    for kind in TOKEN_KEYS:
        figure = tokens[kind]
        if figure is not None and not (
            isinstance(figure, Mapping)
            and set(figure) == {"total", "mean", "counted"}
            and _count(figure["total"])
            and _count(figure["counted"])
            and _number(figure["mean"])
        ):
            raise MMSpuBenchError(
                f"{where}: field '{SECTION}.tokens.{kind}' must be null or {{total, mean, counted}} of counts"
            )
    per_correct = value["tokens_per_correct"]
    if per_correct is not None and not _number(per_correct):
        raise MMSpuBenchError(f"{where}: field '{SECTION}.tokens_per_correct' must be null or a number >= 0")
    return value


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")


def _percent(value: Any) -> bool:
    return _number(value) and value <= 100


def truncated_share(section: Mapping[str, Any] | None) -> float | None:
    """The share (0 to 1) of replies cut inside their reasoning; ``None`` without the section."""
    if section is None or not section.get("n"):
        return None
    return float(section["truncated"]) / float(section["n"])


def truncated_line(section: Mapping[str, Any] | None, limit: float) -> str | None:
    """The run's closing warning when more than ``limit`` (``--max-truncated``) of its replies were
    cut inside their reasoning, else ``None``."""
    share = truncated_share(section)
    if section is None or share is None or share <= limit:
        return None
    return (
        f"warning: {section['truncated']} of {section['n']} replies ({100 * share:.1f}%, above "
        f"--max-truncated {limit:g}) were cut inside their reasoning by the token budget and "
        "counted wrong; raise --max-new-tokens"
    )
