"""``report``'s cells of the ``replies`` section (:mod:`mmspubench.eval.replies.summary`).

``Unparsed`` and ``Truncated`` (counts, apart: a truncated reply was cut inside its reasoning, an
unparsed one was read and named no option) and ``Read by`` (percent of the replies read by the
parser, the judge and neither) are shown when one of the runs reasons or has a judge (results.json
``model.reasoning_style``, or a truncated or judged reply); ``Tokens`` (mean output tokens per
reply, reasoning included) when one of the runs counted its tokens. The table of runs without the
``replies`` section is as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mmspubench.eval.replies.summary import SECTION
from mmspubench.eval.views.confounds.cells import DASH, fixed, pct, section


def _count(key: str) -> Callable[[Mapping[str, Any]], str]:
    def cell(results: Mapping[str, Any]) -> str:
        value = section(results, SECTION).get(key)
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else DASH

    return cell


def _read_by(results: Mapping[str, Any]) -> str:
    share = section(section(results, SECTION), "share")
    if not share:
        return DASH
    return " / ".join(pct(share.get(path)) for path in ("parser", "judge", "none"))


def _tokens(results: Mapping[str, Any]) -> str:
    mean = section(section(section(results, SECTION), "tokens"), "completion").get("mean")
    return fixed(float(mean), 1) if isinstance(mean, (int, float)) and not isinstance(mean, bool) else DASH


def _any_reading(runs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a run's replies were read by more than the parser of a plain reply."""
    return any(
        section(run, SECTION)
        and (
            section(run, "model").get("reasoning_style")
            or section(run, SECTION).get("truncated")
            or section(run, SECTION).get("judged")
        )
        for run in runs
    )


def _any_tokens(runs: Sequence[Mapping[str, Any]]) -> bool:
    return any(section(section(section(run, SECTION), "tokens"), "completion") for run in runs)


READ_BY = "Read by (parser / judge / none %)"
"""The header of the read-path shares (a text cell)."""
CELLS: tuple[
    tuple[str, Callable[[Mapping[str, Any]], str], Callable[[Sequence[Mapping[str, Any]]], bool]], ...
] = (
    ("Unparsed", _count("unparsed"), _any_reading),
    ("Truncated", _count("truncated"), _any_reading),
    (READ_BY, _read_by, _any_reading),
    ("Tokens", _tokens, _any_tokens),
)
"""(header, cell, whether these runs show it), in the table's order."""
