"""Leaderboard: one row per evaluation run, read from ``results.json`` files (docs/DESIGN.md, "Result files").

Runs come from a local results folder (every ``results.json`` below it) or from a Hub dataset
repository holding such folders, downloaded once. Sorting, searching and column selection are
plain functions of the table, so the page and the tests use the same code.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from mmspubench.dataset_builder.hub import display_name, is_hub_id
from mmspubench.dataset_builder.schema import SPURIOUS_TYPES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.plot_data import Series
from mmspubench.eval.intervention_names import BUILTIN_NAMES
from mmspubench.eval.results import read_results
from mmspubench.eval.results_file import Accuracy, Cgla, Dataset, Model, Results, read_results_file
from mmspubench.eval.variants import variant_label
from mmspubench.eval.views.confounds.cells import fixed, worst_types
from mmspubench.markup import escape_cell, hub_link, is_hub_model
from mmspubench.space.replies import THINKING, TOKENS, thinks, tokens_cell, tokens_text

TYPE_COLUMNS: tuple[str, ...] = tuple(t.abbrev for t in SPURIOUS_TYPES)
"""Per-type accuracy columns, in the order of the paper's Table 2."""
ID_COLUMNS: tuple[str, ...] = ("Model",)
RANK = "Rank [95% CI]"
"""Rank by overall accuracy with its 95% interval among the table's comparable runs, filled at
start-up from their samples (:mod:`mmspubench.space.rank_column`); empty for the others. In the
column chooser, not shown by default: the default columns fill the table's width at 1400 pixels
(one more column would break a figure); the note under the table names the tied groups."""
SCORE_COLUMNS: tuple[str, ...] = (*TYPE_COLUMNS, "Average", "Overall", "CGLA_acc")
CONFOUND_COLUMNS: tuple[str, ...] = ("Circular", "Blind", "Gain", "Worst")
"""The confound views of a run (results.json ``circular.accuracy``, ``blind.accuracy``,
``blind.gain`` and ``accuracy.worst_type``); empty for a run that did not record them. Offered in
the column chooser (not shown by default: the default columns fill the table's width)."""
CONFOUND_FIGURES: tuple[str, ...] = ("Circular", "Blind", "Gain")
CONTRAST_COLUMNS: dict[str, str] = {f"TC {name}": name for name in BUILTIN_NAMES}
"""The targeted contrast of each built-in intervention (results.json ``interventions.by_intervention.
NAME.targeted_contrast.value``: the change on the items of the types it targets minus the change on
the others, in points), by column; empty for a run that did not ask it."""
CF_GAP = "CF gap"
"""The twin's counterfactual gap (``interventions.counterfactual_gaps.aligned_minus_broken.gain``:
accuracy with the cues made the true class's minus the published item's, in points)."""
INTERVENTION_COLUMNS: tuple[str, ...] = (*CONTRAST_COLUMNS, CF_GAP)
"""The interventions view's columns (in the column chooser, not shown by default)."""
SIGNED_COLUMNS: tuple[str, ...] = ("Gain", *INTERVENTION_COLUMNS)
"""Figures that are changes, shown signed (``+25.00``)."""
INFO_COLUMNS: tuple[str, ...] = (
    "n",
    "Mode",
    "Variant",
    "Scorer",
    "Date",
    "Dataset revision",
    "Run",
    "Revision",
)
HUB_COLUMNS: tuple[str, ...] = ("Hub Overall", "Hub state", "Source")
"""The Hub's own figure for the model, its verified/community state, and where each figure of the
row comes from (``hub_leaderboard.merge``)."""
ALL_COLUMNS: tuple[str, ...] = (
    *ID_COLUMNS,
    *SCORE_COLUMNS,
    TOKENS,
    RANK,
    *CONFOUND_COLUMNS,
    *INTERVENTION_COLUMNS,
    *INFO_COLUMNS,
    *HUB_COLUMNS,
)
TEXT_COLUMNS: tuple[str, ...] = tuple(
    c for c in (RANK, "Worst", *INFO_COLUMNS, *HUB_COLUMNS) if c not in ("n", "Hub Overall")
)
"""Columns shown as plain text (``Model`` is Markdown, escaped; the others are numbers)."""
DEFAULT_COLUMNS: tuple[str, ...] = (*ID_COLUMNS, *SCORE_COLUMNS, "Mode", "Variant", "Hub Overall", "Source")
"""``Mode`` and ``Variant`` are shown by default: two runs of a model that differ only in answer
mode (``generate``, ``logprob``) or only in being partial say so; an ``attribute-hint`` run reads
``attribute-hint (ceiling)``. The defaults fit the table's width at 1400 pixels (``n``, ``Scorer``,
``Date`` and ``Hub state`` are a click away; ``Source`` names the Hub state). ``Tokens``
(:data:`~mmspubench.space.replies.TOKENS`), beside the accuracy columns, is in the column chooser:
one more default column would break a figure at that width."""
PARTIAL = "_partial"
"""Column of the full frame, never shown: a partial run's marker (:func:`partial_marker`), else
empty. It keeps partial runs apart: ranked after every full run (:func:`sort_frame`) and never
replacing one (``hub_leaderboard.latest_runs``)."""
FRAME_COLUMNS: tuple[str, ...] = (*ALL_COLUMNS, PARTIAL)
"""Columns of the full leaderboard frame (:data:`ALL_COLUMNS` and the hidden :data:`PARTIAL`)."""


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run as shown on the leaderboard."""

    model_id: str
    """Model id or path as recorded in results.json."""
    row: dict[str, Any]
    """Values of ``FRAME_COLUMNS`` (the ``Model`` cell is a Markdown link when the id is a Hub id)."""
    created_at: str = ""
    """results.json's ``created_at`` in full (the Date column keeps the day): which of two runs of
    one model made the same day is the later (:func:`created_time`)."""


EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def created_time(entry: RunEntry) -> datetime:
    """The entry's ``created_at`` as a UTC time, a time without zone read as UTC; one that is no
    ISO time (a hand-made results.json) is the earliest, so any run with a time is later."""
    try:
        when = datetime.fromisoformat(entry.created_at)
    except ValueError:
        return EARLIEST
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _number(value: Any) -> float:
    """A finite float, or NaN when the run did not record the figure (or recorded no number: a
    string, a boolean, an infinity from an edited file)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return math.nan
    return float(value)


def model_link(model_id: str, hub: bool = True) -> str:
    """Markdown link to the model page for a valid Hub id (``org/name``); anything else as escaped
    text, a local model by its folder name only (an absolute path says nothing to a visitor and
    tells them about the machine). A run's model id is never markup. ``hub=False``: the run says
    its model is no Hub repo (``markup.is_hub_model``), so never a link."""
    if not hub or not is_hub_id(model_id) or "/" not in model_id:
        return escape_cell(display_name(model_id))
    return hub_link(model_id, kind="model")


def plain_model(cell: str) -> str:
    """The text a visitor reads in a ``Model`` cell (for search and plot legends)."""
    label = cell[1:].split("](")[0] if cell.startswith("[") else cell
    return html.unescape(label)


def column_datatypes(columns: Sequence[str]) -> list[str]:
    """Gradio datatypes of the shown columns: Markdown for ``Model``, text or number for the rest."""
    return ["markdown" if c == "Model" else "str" if c in TEXT_COLUMNS else "number" for c in columns]


def scorer_cell(model: Mapping[str, Any]) -> str:
    """``fast``, ``plain`` or ``mixed``, with the reason when the fast scorer was asked for and not used."""
    used = model.get("scorer_used")
    if not used:
        return ""
    reason = model.get("scorer_fallback_reason")
    return f"{used} (fast not used: {reason})" if reason else str(used)


def _accuracy_only(results: Results) -> bool:
    """A run without CGLA (e.g. an API without prompt log-probabilities): marked in the Mode column."""
    return bool(results.accuracy_only) or (results.accuracy is not None and results.cgla is None)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def partial_marker(results: Results | Mapping[str, Any]) -> str:
    """``partial (n=2 of 90)`` for a run of part of its split (``eval --limit``, or fewer items than
    the split it records in ``dataset.split_n``); empty for a full run."""
    typed = Results.of(results, "results.json")
    dataset = typed.dataset or Dataset()
    n, whole, limit = _count(dataset.n), _count(dataset.split_n), _count(typed.options.get("limit"))
    if whole is not None and n is not None and n < whole:
        return f"partial (n={n} of {whole})"
    if limit is not None and (whole is None or limit < whole):
        return f"partial (--limit {limit}, n={n if n is not None else '?'})"
    return ""


def mode_cell(results: Results, reasoned: bool = False) -> str:
    """The answer mode, ``(accuracy only)`` for a run without CGLA, the thinking mark
    (:mod:`mmspubench.space.replies`; ``reasoned``: its samples record reasoning) and the partial
    marker: ``logprob``, ``generate (accuracy only)``, ``generate, thinking, partial (n=2 of 90)``."""
    config = results.options
    mode = str(config.get("answer_mode", "")) + (" (accuracy only)" if _accuracy_only(results) else "")
    marks = [THINKING] if reasoned or thinks(results) else []
    return ", ".join(part for part in (mode, *marks, partial_marker(results)) if part)


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def worst_cell(results: Results) -> str:
    """``TYPE value`` of ``accuracy.worst_type`` (the lowest type with >= 10 items; ``TYPE/TYPE value``
    for a tie); empty without it."""
    accuracy = results.accuracy or Accuracy()
    worst = accuracy.worst_type or {}
    value = _number(worst.get("value"))
    if not worst or math.isnan(value):
        return ""
    return f"{worst_types(accuracy.to_json())[:24]} {fixed(value)}"


def confound_cells(results: Results | Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`CONFOUND_COLUMNS` of a run (NaN or empty where it did not record the view)."""
    typed = Results.of(results, "results.json")
    circular, blind = typed.section("circular") or {}, typed.section("blind") or {}
    return {
        "Circular": _number(circular.get("accuracy")),
        "Blind": _number(blind.get("accuracy")),
        "Gain": _number(blind.get("gain")),
        "Worst": worst_cell(typed),
    }


def intervention_cells(results: Results) -> dict[str, float]:
    """The :data:`INTERVENTION_COLUMNS` of a run (NaN where it did not ask the intervention, its
    contrast is undefined, or no ``cue-aligned`` counterfactual ran)."""
    section = results.section("interventions") or {}
    by_name = _section(section, "by_intervention")
    cells = {
        column: _number(_section(_section(by_name, name), "targeted_contrast").get("value"))
        for column, name in CONTRAST_COLUMNS.items()
    }
    gap = _section(_section(section, "counterfactual_gaps"), "aligned_minus_broken")
    cells[CF_GAP] = _number(gap.get("gain"))
    return cells


def run_entry(results: Results | Mapping[str, Any], run_name: str) -> RunEntry:
    """The leaderboard row of one parsed results.json."""
    typed = Results.of(results, run_name)
    model, dataset = typed.model or Model(), typed.dataset or Dataset()
    accuracy, cgla = typed.accuracy or Accuracy(), typed.cgla or Cgla()
    model_id = str(model.get("id", "?"))
    row: dict[str, Any] = {"Model": model_link(model_id, hub=is_hub_model(model.to_json()))}
    for abbrev in TYPE_COLUMNS:
        row[abbrev] = _number((accuracy.by_type or {}).get(abbrev))
    # Table 2's "Average" (the mean over the types, computed by the run); "Overall" is item-level.
    row["Average"] = _number(accuracy.average)
    row["Overall"] = _number(accuracy.overall)
    row["CGLA_acc"] = _number(cgla.acc)
    row[TOKENS] = tokens_cell(typed)
    row[RANK] = ""  # filled from the runs' samples once the table is known (space/rank_column.py)
    row.update(confound_cells(typed))
    row.update(intervention_cells(typed))
    row["n"] = _count(dataset.n) or 0  # an edited file's "ten" is no count
    row["Mode"] = mode_cell(typed)
    row["Variant"] = variant_label(typed.config or {})
    row["Scorer"] = scorer_cell(model.to_json())
    created = str(typed.created_at) if "created_at" in typed.keys else ""
    row["Date"] = created[:10]
    row["Dataset revision"] = str(dataset.get("revision", ""))[:12]
    row["Run"] = run_name
    row["Revision"] = model.revision or ""
    row.update({"Hub Overall": math.nan, "Hub state": "", "Source": "results dataset"})
    row[PARTIAL] = partial_marker(typed)
    return RunEntry(model_id=model_id, row=row, created_at=created)


def discover_runs(results_dir: Path) -> list[Path]:
    """Every ``results.json`` below ``results_dir``, sorted by path."""
    if not results_dir.is_dir():
        raise MMSpuBenchError(f"{results_dir}: results folder does not exist")
    return sorted(results_dir.rglob("results.json"))


def load_entries(results_dir: Path) -> list[RunEntry]:
    """Leaderboard entries of every run below ``results_dir``; unreadable files are refused by name."""
    entries = []
    for path in discover_runs(results_dir):
        results = read_results_file(path)
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
    frame = pd.DataFrame([e.row for e in entries], columns=list(FRAME_COLUMNS))
    return sort_frame(frame, "Average", ascending=False)


def sort_frame(frame: pd.DataFrame, by: str, ascending: bool) -> pd.DataFrame:
    """Rows sorted by column ``by``; runs missing the figure go last either way, and partial runs
    (:data:`PARTIAL`) after every full run (a run of 2 items never outranks one of all 90)."""
    if by not in frame.columns or by == PARTIAL:
        shown = [c for c in frame.columns if c != PARTIAL]
        raise MMSpuBenchError(f"cannot sort by {by!r}; columns are {shown}")
    partial = frame[PARTIAL].fillna("").astype(bool) if PARTIAL in frame.columns else False
    keyed = frame.assign(_apart=partial)
    ordered = keyed.sort_values(
        ["_apart", by], ascending=[True, ascending], na_position="last", kind="stable"
    )
    return ordered.drop(columns="_apart").reset_index(drop=True)


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
        text = (frame["Model"].map(plain_model) + " " + frame["Run"].astype(str)).str.lower()
        rows = frame[text.str.contains(needle, regex=False)]
    rows = sort_frame(rows, sort_by, ascending)
    return rows[chosen].round(2)


def gain_text(value: float) -> str:
    """The gain of the image and every change (:data:`SIGNED_COLUMNS`), signed (``+25.00``: the image
    helps; a gain that rounds to zero reads ``+0.00``)."""
    return fixed(value, signed=True)


def figure_text(value: float) -> str:
    """Every figure of the table (per-type accuracy, Average, Overall, CGLA_acc, Hub Overall), two decimals."""
    return fixed(value)


def styled(frame: pd.DataFrame) -> Any:
    """The table as the page shows it: every figure with two decimals (``50.00`` beside ``38.89``),
    a missing one as an empty cell; the values underneath stay numbers (sorting is by value)."""
    figures = [c for c in (*SCORE_COLUMNS, "Circular", "Blind", "Hub Overall") if c in frame.columns]
    formats = {
        **dict.fromkeys(figures, figure_text),
        **dict.fromkeys((c for c in SIGNED_COLUMNS if c in frame.columns), gain_text),
        **({TOKENS: tokens_text} if TOKENS in frame.columns else {}),
    }
    return frame.style.format(formats, na_rep="")


def board_runs(frame: pd.DataFrame) -> list[str]:
    """The results runs of the table, in its order (a Hub-only row names none): the runs the chart draws."""
    return [str(run) for run in frame["Run"] if isinstance(run, str) and run]


def type_comparison_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Long format for the comparison plot: ``model``, ``type``, ``accuracy`` (one row per run and type)."""
    records = []
    for _, row in frame.iterrows():
        # The plain id in the legend (a plot draws text, never markup); the run name keeps two runs
        # of one model apart.
        model = plain_model(str(row["Model"]))
        label = f"{model} ({row['Run']})" if (frame["Model"] == row["Model"]).sum() > 1 else model
        for abbrev in TYPE_COLUMNS:
            if not math.isnan(row[abbrev]):
                records.append({"model": label, "type": abbrev, "accuracy": float(row[abbrev])})
    return pd.DataFrame(records, columns=["model", "type", "accuracy"])


LEGEND_WIDTH = 72
"""Characters per line of a run's legend label in the chart (longer ones wrap, never cut)."""
CHART_RUNS = 12
"""Most runs the chart draws: the table's first ones (a chart of 200 runs' bars reads as none)."""


def plot_series(results_dir: Path, entries: Sequence[RunEntry]) -> tuple[Series, ...]:
    """The comparison chart's data: what ``report --plot`` draws for these runs
    (:func:`mmspubench.eval.analysis.plot_data.report_series`, intervals from results.json and
    samples.jsonl); a partial run's legend label ends in its marker (``[partial (n=2 of 90)]``)."""
    from mmspubench.eval.analysis.plot_data import report_series, run_labels
    from mmspubench.eval.results import RESULTS_NAME, SAMPLES_NAME, read_finished_samples
    from mmspubench.eval.run_stamp import check_samples_beside

    folders = [results_dir / str(e.row["Run"]) for e in entries]
    runs = [read_results(folder / RESULTS_NAME) for folder in folders]
    samples = [
        read_finished_samples(f / SAMPLES_NAME) if (f / SAMPLES_NAME).is_file() else None for f in folders
    ]
    for folder, results, read in zip(folders, runs, samples, strict=True):
        if read is not None:  # the intervals drawn are the run's own samples'
            check_samples_beside(folder / SAMPLES_NAME, results, folder / RESULTS_NAME)
    # A partial run says so in the legend, as in the table's Mode column; a long label wraps
    # (a 300-character model id widened the figure until its bars were too small to read).
    labels = [
        textwrap.fill(f"{label} [{e.row[PARTIAL]}]" if e.row.get(PARTIAL) else label, LEGEND_WIDTH)
        for label, e in zip(run_labels(runs, folders), entries, strict=True)
    ]
    return tuple(report_series(r, s, label) for r, s, label in zip(runs, samples, labels, strict=True))
