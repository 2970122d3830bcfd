"""The leaderboard from two sources: the results dataset's runs and the Hub's own leaderboard.

(a) Runs of the results dataset carry every figure (per-type accuracy, Average, Overall, CGLA);
their samples are re-checked as ``submit`` checks a run's own consistency (finite scores, one
record per id, answers and CGLA fields following from the records, every figure recomputed and
equal), and a run failing a check is left out with its reason in the note.
(b) The Hub aggregates the ``.eval_results`` entries that ``submit`` adds to model repos into the
benchmark's leaderboard (``HfApi.get_dataset_leaderboard``, huggingface_hub >= 1.8): one
``mcq_accuracy`` figure per model, verified or community.

The merge has one row per model and revision (the latest run of a pair when the dataset holds
several); ``Source`` says where each figure of the row comes from. Offline, without the method,
or when the Hub answers nothing, (a) is shown alone and the note says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from mmspubench.dataset_builder.eval_yaml import TASKS
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import escape_cell
from mmspubench.space import leaderboard

HUB_TASK = "mcq_accuracy"
"""The eval.yaml task the Hub's leaderboard ranks (results.json's ``accuracy.overall``)."""
RESULTS_SOURCE = "results dataset"
HUB_SOURCE = "Hub leaderboard"


@dataclass(frozen=True, slots=True)
class HubEntry:
    """One entry of the Hub's leaderboard of the benchmark."""

    model_id: str
    """Model repo id."""
    overall: float
    """``mcq_accuracy`` in percent (the Hub stores the task's declared scale, a fraction)."""
    verified: bool
    """Whether the Hub marks the result verified (else a community submission)."""
    revision: str = ""
    """Model revision when the entry records one (the Hub's entries do not today)."""

    @property
    def state(self) -> str:
        """``verified`` or ``community``."""
        return "verified" if self.verified else "community"


def _to_percent(value: float) -> float:
    scale = next((t.scale for t in TASKS if t.id == HUB_TASK), "fraction")
    return 100.0 * value if scale == "fraction" else value


def hub_entries(dataset_id: str, api: Any = None) -> tuple[list[HubEntry], str]:
    """The Hub's leaderboard of ``dataset_id`` as entries, and a note when it could not be read."""
    import huggingface_hub
    from mmspubench.dataset_builder.hub import hub_offline
    from mmspubench.dataset_builder.load import network_errors

    if hub_offline(datasets=False):
        return [], "Hub leaderboard not consulted (offline): figures from the results dataset alone."
    api = api if api is not None else huggingface_hub.HfApi()
    method = getattr(api, "get_dataset_leaderboard", None)
    if method is None:
        return [], (
            f"huggingface_hub {huggingface_hub.__version__} has no get_dataset_leaderboard (1.8 or later): "
            "figures from the results dataset alone."
        )
    try:
        raw = list(method(dataset_id) or [])
    except (ValueError, *network_errors()) as err:
        return (
            [],
            f"Hub leaderboard of {dataset_id} not available ({type(err).__name__}): results dataset alone.",
        )
    entries = []
    for item in raw:
        task = getattr(item, "task_id", None) or getattr(item, "taskId", None)
        value = getattr(item, "value", None)
        if (task and task != HUB_TASK) or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        revision = str(getattr(item, "revision", None) or "")
        entries.append(HubEntry(str(item.model_id), _to_percent(float(value)), bool(item.verified), revision))
    if not entries:
        return [], f"the Hub's leaderboard of {dataset_id} has no entries yet: results dataset alone."
    return entries, ""


def check_run(run_dir: Path) -> None:
    """A results run's samples re-checked as ``submit`` checks a run's consistency (no Hub needed)."""
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.results import read_finished_samples, read_results, recompute
    from mmspubench.space.submit import check_ranges, check_samples, compare_aggregates
    from mmspubench.space.submit_checks import check_sample_consistency

    where = str(run_dir / "results.json")
    results = read_results(run_dir / "results.json")
    samples = read_finished_samples(run_dir / "samples.jsonl")
    try:
        config = RunConfig.from_json(results["config"])
    except (KeyError, ValueError, TypeError) as err:
        raise MMSpuBenchError(f"{where}: field 'config' is malformed ({err})") from None
    check_ranges(results, where)
    check_samples(tuple(samples), where)
    check_sample_consistency(samples, config, where)
    recomputed = recompute(samples, config)
    for section in ("accuracy", "cgla"):
        compare_aggregates(results.get(section), recomputed[section], section, where)


def checked_entries(
    folder: Path, entries: Sequence[leaderboard.RunEntry]
) -> tuple[list[leaderboard.RunEntry], list[str]]:
    """The runs whose samples pass the checks (runs without samples kept, marked), and the refusals."""
    kept, refused = [], []
    for entry in entries:
        run_dir = folder / str(entry.row["Run"])
        if (run_dir / "samples.jsonl").is_file():
            try:
                check_run(run_dir)
            except MMSpuBenchError as err:
                refused.append(f"run {entry.row['Run']} left out: {err}")
                continue
            source = f"{RESULTS_SOURCE} (samples re-checked)"
        else:
            source = f"{RESULTS_SOURCE} (no samples.jsonl: not re-checked)"
        kept.append(leaderboard.RunEntry(entry.model_id, {**entry.row, "Source": source}))
    return kept, refused


def _hub_row(entry: HubEntry) -> dict[str, Any]:
    row: dict[str, Any] = {c: math.nan for c in leaderboard.SCORE_COLUMNS}
    row.update({c: "" for c in leaderboard.TEXT_COLUMNS})
    row.update(
        Model=leaderboard.model_link(entry.model_id),
        Overall=entry.overall,
        n=0,
        Revision=entry.revision,
        Source=f"{HUB_SOURCE} ({entry.state}): Overall",
        **{"Hub Overall": entry.overall, "Hub state": entry.state},
    )
    return row


def merge(entries: Sequence[leaderboard.RunEntry], hub: Sequence[HubEntry]) -> pd.DataFrame:
    """One row per model and revision: the latest results run, with the Hub's figure beside it."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in sorted(entries, key=lambda e: str(e.row.get("Date", ""))):
        row = {"Hub Overall": math.nan, "Hub state": "", "Source": RESULTS_SOURCE, **entry.row}
        rows[(entry.model_id, str(row.get("Revision", "")))] = row  # a later run of the pair wins
    for hub_entry in hub:
        key = (hub_entry.model_id, hub_entry.revision)
        if key not in rows:
            rows[key] = _hub_row(hub_entry)
            continue
        row = rows[key]
        row["Hub Overall"], row["Hub state"] = hub_entry.overall, hub_entry.state
        row["Source"] = (
            f"{row['Source']}: every figure but Hub Overall; {HUB_SOURCE} ({hub_entry.state}): Hub Overall"
        )
    frame = pd.DataFrame(list(rows.values()), columns=list(leaderboard.ALL_COLUMNS))
    return leaderboard.sort_frame(frame, "Average", ascending=False)


def board(
    folder: Path | None, entries: Sequence[leaderboard.RunEntry], dataset_id: str, api: Any = None
) -> tuple[pd.DataFrame, str]:
    """The merged leaderboard and its note (what was left out, where the figures come from)."""
    kept, notes = checked_entries(folder, entries) if folder is not None else ([], [])
    hub, hub_note = hub_entries(dataset_id, api)
    if hub_note:
        notes.insert(0, hub_note)
    return merge(kept, hub), "\n".join(f"- {escape_cell(n)}" for n in notes)


def benchmark_id(dataset: str | None) -> str:
    """Whose Hub leaderboard to read: the explored dataset when it is a Hub id, else the published one."""
    from mmspubench.dataset_builder.hub import is_hub_id
    from mmspubench.space.submit import PUBLISHED_DATASET_ID

    if dataset and is_hub_id(dataset) and "/" in dataset and not Path(dataset).exists():
        return dataset
    return PUBLISHED_DATASET_ID
