"""Whether a results run belongs beside the items the Space explores, and beside the other runs.

A run is shown only beside the items and the runs it was made on. Its dataset decides first: a run
whose results.json records another dataset than the one the Space explores (another content hash,
or, where no content hash is recorded on both sides, another Hub id or revision) is left out of the
leaderboard, its chart and Explore, and the page says why. A run that records neither (a hand-made
or very old results.json) cannot be matched: it is kept, the note says so, and each of its records
is shown under an item only when it is that item's (:func:`record_fault`: answer, class name and
types). That its samples are its own is the run stamps' part
(:func:`mmspubench.eval.run_stamp.check_samples_beside`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mmspubench.dataset_builder.schema import Item
from mmspubench.eval.results_file import Results

Verdict = Literal["same", "other", "unknown"]


def _named(dataset: Mapping[str, Any]) -> str:
    """``content hash 880345f6c961`` or ``org/name@0123456789ab``: how a dataset is told apart."""
    if dataset.get("content_hash"):
        return f"content hash {str(dataset['content_hash'])[:12]}"
    return f"{dataset.get('id')}@{str(dataset.get('revision'))[:12]}"


def dataset_verdict(run: Mapping[str, Any], explored: Mapping[str, Any]) -> Verdict:
    """``same`` when ``run`` (results.json's ``dataset``) is the explored dataset, ``other`` when it
    is another, ``unknown`` when the two records hold nothing to tell them by: the content hash
    where both record one, else the Hub id and revision where both record them."""
    ours, theirs = explored.get("content_hash"), run.get("content_hash")
    if ours and theirs:
        return "same" if ours == theirs else "other"
    pinned = ("id", "revision")
    if all(explored.get(k) for k in pinned) and all(run.get(k) for k in pinned):
        return "same" if all(run[k] == explored[k] for k in pinned) else "other"
    return "unknown"


def dataset_fault(results: Results, explored: Mapping[str, Any] | None) -> str | None:
    """Why the run of ``results`` is not shown beside the explored dataset's items (it was made on
    another), or ``None`` (the same dataset, or nothing to tell them by)."""
    run = {} if results.dataset is None else results.dataset.to_json()
    if explored is None or dataset_verdict(run, explored) != "other":
        return None
    return (
        f"made on another dataset ({_named(run)}) than the one this Space explores "
        f"({_named(explored)}): a run is shown only beside the items it was made on"
    )


def unmatched(results: Results, explored: Mapping[str, Any] | None) -> bool:
    """Whether the run of ``results`` records nothing to match with the explored dataset."""
    run = {} if results.dataset is None else results.dataset.to_json()
    return explored is not None and dataset_verdict(run, explored) == "unknown"


def _cut(value: Any) -> Any:
    """A record's value as an error line repeats it: a long text cut to 80 characters."""
    return value[:80] if isinstance(value, str) else value


def record_fault(record: Mapping[str, Any], item: Item) -> str | None:
    """What shows that a run's ``record`` of the item's id is not of ``item`` (its answer, class
    name or types differ: another dataset's item under the same id), or ``None``."""
    for field, theirs, ours in (
        ("answer", record.get("answer"), item.answer),
        ("class_name", record.get("class_name"), item.class_name),
        ("types", list(record.get("types") or ()), list(item.spurious_types)),
    ):
        if theirs != ours:
            return f"its {field} {_cut(theirs)!r}, the item's {_cut(ours)!r}"
    return None
