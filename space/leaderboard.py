"""Leaderboard: one row per evaluation run, read from ``results.json`` files (DESIGN.md, "Result files").

Runs come from a local results folder (every ``results.json`` below it) or from a Hub dataset
repository holding such folders, downloaded once. Sorting, searching and column selection are
plain functions of the table, so the page and the tests use the same code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES
from mmspubench.errors import MMSpuBenchError

TYPE_COLUMNS: tuple[str, ...] = tuple(t.abbrev for t in SPURIOUS_TYPES)
"""Per-type accuracy columns, in the order of the paper's Table 2."""
ID_COLUMNS: tuple[str, ...] = ("Model",)
SCORE_COLUMNS: tuple[str, ...] = (*TYPE_COLUMNS, "Average", "Overall", "CGLA_acc")
INFO_COLUMNS: tuple[str, ...] = ("n", "Mode", "Date", "Dataset revision", "Run")
ALL_COLUMNS: tuple[str, ...] = (*ID_COLUMNS, *SCORE_COLUMNS, *INFO_COLUMNS)
DEFAULT_COLUMNS: tuple[str, ...] = (*ID_COLUMNS, *SCORE_COLUMNS, "n", "Date")
HUB_URL = "https://huggingface.co"


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run as shown on the leaderboard."""

    model_id: str
    """Model id or path as recorded in results.json."""
    row: dict[str, Any]
    """Values of ``ALL_COLUMNS`` (the ``Model`` cell is a Markdown link when the id is a Hub id)."""


def _number(value: Any) -> float:
    """A finite float, or NaN when the run did not record the figure."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def model_link(model_id: str) -> str:
    """Markdown link to the model page for a Hub id (``org/name``); the bare text for a local path."""
    parts = model_id.split("/")
    looks_local = model_id.startswith((".", "/", "~")) or len(parts) != 2 or not all(parts)
    if looks_local:
        return model_id
    return f"[{model_id}]({HUB_URL}/{model_id})"


def run_entry(results: Mapping[str, Any], run_name: str) -> RunEntry:
    """The leaderboard row of one parsed results.json."""
    model = results.get("model") or {}
    dataset = results.get("dataset") or {}
    accuracy = results.get("accuracy") or {}
    cgla = results.get("cgla") or {}
    config = results.get("config") or {}
    by_type = accuracy.get("by_type") or {}
    model_id = str(model.get("id", "?"))
    row: dict[str, Any] = {"Model": model_link(model_id)}
    for abbrev in TYPE_COLUMNS:
        row[abbrev] = _number(by_type.get(abbrev))
    present = [row[a] for a in TYPE_COLUMNS if not math.isnan(row[a])]
    # Table 2's "Average" is the mean over the types, not the item-level accuracy (items with two
    # types count twice there); the item-level figure is shown as "Overall".
    row["Average"] = sum(present) / len(present) if present else math.nan
    row["Overall"] = _number(accuracy.get("overall"))
    row["CGLA_acc"] = _number(cgla.get("acc"))
    row["n"] = int(dataset.get("n", 0) or 0)
    row["Mode"] = str(config.get("answer_mode", ""))
    row["Date"] = str(results.get("created_at", ""))[:10]
    row["Dataset revision"] = str(dataset.get("revision", ""))[:12]
    row["Run"] = run_name
    return RunEntry(model_id=model_id, row=row)


def discover_runs(results_dir: Path) -> list[Path]:
    """Every ``results.json`` below ``results_dir``, sorted by path."""
    if not results_dir.is_dir():
        raise MMSpuBenchError(f"{results_dir}: results folder does not exist")
    return sorted(results_dir.rglob("results.json"))


def load_entries(results_dir: Path) -> list[RunEntry]:
    """Leaderboard entries of every run below ``results_dir``; unreadable files are refused by name."""
    entries = []
    for path in discover_runs(results_dir):
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise MMSpuBenchError(f"{path}: cannot read results: {err}") from None
        if not isinstance(results, dict):
            raise MMSpuBenchError(f"{path}: expected a JSON object")
        entries.append(run_entry(results, str(path.parent.relative_to(results_dir)) or "."))
    return entries


def resolve_results(source: str) -> Path:
    """A local results folder, or a Hub dataset repo id downloaded (results files only) to the cache."""
    path = Path(source).expanduser()
    if path.exists():
        return path
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(
            snapshot_download(
                source, repo_type="dataset", allow_patterns=["**/results.json", "**/samples.jsonl"]
            )
        )
    except (HfHubHTTPError, LocalEntryNotFoundError, ValueError, OSError) as err:
        raise MMSpuBenchError(
            f"results {source!r}: not a local folder, and the Hub dataset could not be fetched ({err})"
        ) from None


def leaderboard_frame(entries: Sequence[RunEntry]) -> pd.DataFrame:
    """All columns, one row per run, best Average first."""
    frame = pd.DataFrame([e.row for e in entries], columns=list(ALL_COLUMNS))
    return sort_frame(frame, "Average", ascending=False)


def sort_frame(frame: pd.DataFrame, by: str, ascending: bool) -> pd.DataFrame:
    """Rows sorted by column ``by``; runs missing the figure go last either way."""
    if by not in frame.columns:
        raise MMSpuBenchError(f"cannot sort by {by!r}; columns are {list(frame.columns)}")
    return frame.sort_values(by, ascending=ascending, na_position="last", kind="stable").reset_index(
        drop=True
    )


def view_frame(
    frame: pd.DataFrame,
    query: str = "",
    columns: Sequence[str] | None = None,
    sort_by: str = "Average",
    ascending: bool = False,
) -> pd.DataFrame:
    """Rows whose model or run matches ``query`` (case-insensitive), sorted, with ``columns`` kept.

    ``Model`` is always kept so a row stays identifiable.
    """
    chosen = [c for c in ALL_COLUMNS if c in (columns or DEFAULT_COLUMNS)]
    unknown = set(columns or ()) - set(ALL_COLUMNS)
    if unknown:
        raise MMSpuBenchError(
            f"unknown leaderboard column {sorted(unknown)[0]!r}; expected some of {list(ALL_COLUMNS)}"
        )
    if "Model" not in chosen:
        chosen.insert(0, "Model")
    rows = frame
    if query.strip():
        needle = query.strip().lower()
        text = (frame["Model"].astype(str) + " " + frame["Run"].astype(str)).str.lower()
        rows = frame[text.str.contains(needle, regex=False)]
    rows = sort_frame(rows, sort_by, ascending)
    return rows[chosen].round(2)


def type_comparison_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Long format for the comparison plot: ``model``, ``type``, ``accuracy`` (one row per run and type)."""
    records = []
    for _, row in frame.iterrows():
        # Strip the Markdown link so the legend shows the plain id; the run name keeps two runs of
        # one model apart.
        model = str(row["Model"]).split("](")[0].lstrip("[")
        label = f"{model} ({row['Run']})" if (frame["Model"] == row["Model"]).sum() > 1 else model
        for abbrev in TYPE_COLUMNS:
            if not math.isnan(row[abbrev]):
                records.append({"model": label, "type": abbrev, "accuracy": float(row[abbrev])})
    return pd.DataFrame(records, columns=["model", "type", "accuracy"])
