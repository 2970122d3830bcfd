"""The leaderboard from two sources: the results dataset's runs and the Hub's own leaderboard.

(a) Runs of the results dataset carry every figure (per-type accuracy, Average, Overall, CGLA);
their samples are re-checked as ``submit`` checks a run's own consistency (finite scores, one
record per id, answers and CGLA fields following from the records, every figure recomputed and
equal), and a run failing a check is left out with its reason in the note.
(b) The Hub aggregates the ``.eval_results`` entries that ``submit`` adds to model repos into the
benchmark's leaderboard (``HfApi.get_dataset_leaderboard``, huggingface_hub >= 1.8): one
``mcq_accuracy`` figure per model, verified or community.

The merge has one row per results run, one run per model id, prompt variant, answer mode and
completeness (the latest when the dataset holds several; a partial run, ``eval --limit``, never
replaces a full one; the model's revision is not part of the key, as Hub entries carry none), the Hub's figure of that model id beside it (a verified entry over a community one),
and a row for each Hub model without a run; ``Source`` says where each figure of the row comes
from and names only the row's own run. Every Hub entry is checked (:func:`parse_entry`); a bad one
is left out and named in the note. Offline, without the method, on any failure of the call, or
when the answer is not a list of entries, (a) is shown alone and the note says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from mmspubench.dataset_builder.eval_yaml import TASKS
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import escape_cell
from mmspubench.space import leaderboard
from mmspubench.space.replies import TOKENS, replies_reason

if TYPE_CHECKING:
    from mmspubench.eval.records import SampleResult

HUB_TASK = "mcq_accuracy"
"""The eval.yaml task the Hub's leaderboard ranks (results.json's ``accuracy.overall``)."""
RESULTS_SOURCE = "results dataset"
HUB_SOURCE = "Hub leaderboard"
MAX_REFUSALS_NAMED = 3
"""Left-out Hub entries named in the note; the rest are counted."""


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


def _field(item: Any, *names: str) -> Any:
    """The first of ``names`` an entry holds (an object of huggingface_hub, or a plain mapping)."""
    for name in names:
        value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if value is not None:
            return value
    return None


def parse_entry(item: Any) -> HubEntry | str | None:
    """One answer entry checked: a ``HubEntry``, ``None`` for another task, or why it is left out.

    ``model_id`` a Hub model id, ``value`` a real number in [0, 1] (the task's declared scale, a
    fraction; a boolean or an infinite number is not one), ``verified`` a boolean.
    """
    from mmspubench.dataset_builder.hub import is_hub_id

    task = _field(item, "task_id", "taskId")
    if task is not None and task != HUB_TASK:
        return None
    model_id, value, verified = (
        _field(item, "model_id", "modelId"),
        _field(item, "value"),
        _field(item, "verified"),
    )
    if not isinstance(model_id, str) or "/" not in model_id or not is_hub_id(model_id):
        return f"model id {model_id!r} is not a Hub model id"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"{model_id}: value {value!r} is not a finite number"
    if not 0.0 <= value <= 1.0:
        return f"{model_id}: value {value!r} is outside [0, 1] (mcq_accuracy is a fraction)"
    if not isinstance(verified, bool):
        return f"{model_id}: field 'verified' is {verified!r}, not true or false"
    revision = _field(item, "revision")
    return HubEntry(
        model_id, _to_percent(float(value)), verified, revision if isinstance(revision, str) else ""
    )


def parse_answer(raw: Any, dataset_id: str) -> tuple[list[HubEntry], str]:
    """The entries of a Hub answer that pass :func:`parse_entry`, and one note on what was left out.

    An answer that is not a list falls back to the results dataset alone, with a note."""
    if not isinstance(raw, (list, tuple)):
        return [], (
            f"the Hub's leaderboard of {dataset_id} answered {type(raw).__name__}, not a list of "
            "entries: results dataset alone."
        )
    entries, refused = [], []
    for number, item in enumerate(raw, 1):
        parsed = parse_entry(item)
        if isinstance(parsed, str):
            refused.append(f"#{number} ({parsed})")
        elif parsed is not None:
            entries.append(parsed)
    note = ""
    if refused:
        more = f" and {len(refused) - MAX_REFUSALS_NAMED} more" if len(refused) > MAX_REFUSALS_NAMED else ""
        note = (
            f"{len(refused)} of the Hub leaderboard's {len(raw)} entries left out: "
            f"{'; '.join(refused[:MAX_REFUSALS_NAMED])}{more}"
        )
    if not entries:
        said = f"no valid entries ({note})" if note else "no entries yet"
        return [], f"the Hub's leaderboard of {dataset_id} has {said}: results dataset alone."
    return entries, note


def hub_entries(dataset_id: str, api: Any = None) -> tuple[list[HubEntry], str]:
    """The Hub's leaderboard of ``dataset_id`` as checked entries, and a note (what could not be
    read, what was left out). Any failure of the call, the network's or the answer's (the library
    raises ``TypeError``/``KeyError`` on a malformed answer), falls back to the results dataset."""
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
        raw = method(dataset_id)
    except (ValueError, TypeError, KeyError, AttributeError, *network_errors()) as err:
        return (
            [],
            f"Hub leaderboard of {dataset_id} not available ({type(err).__name__}): results dataset alone.",
        )
    return parse_answer([] if raw is None else raw, dataset_id)


def _cell_fields() -> dict[str, tuple[tuple[str, ...], float]]:
    """Each intervention column's field in results.json and the largest size its value can have:
    a contrast is a difference of two changes (each within 100 points), a gap one change."""
    fields: dict[str, tuple[tuple[str, ...], float]] = {
        column: (("interventions", "by_intervention", name, "targeted_contrast", "value"), 200.0)
        for column, name in leaderboard.CONTRAST_COLUMNS.items()
    }
    fields[leaderboard.CF_GAP] = (
        ("interventions", "counterfactual_gaps", "aligned_minus_broken", "gain"),
        100.0,
    )
    return fields


def check_intervention_cells(results: Mapping[str, Any], where: str) -> None:
    """Refuse an intervention column's figure that no run can produce (infinite, or a change of
    more points than there are), naming its field: for a run shown without samples to recompute from."""
    for path, bound in _cell_fields().values():
        value: Any = results
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value) or abs(value) > bound:
            raise MMSpuBenchError(
                f"{where}: field {'.'.join(path)!r}: value {value!r} is outside [-{bound:g}, {bound:g}] (points)"
            )


def check_run(run_dir: Path) -> list[SampleResult]:
    """A results run's samples re-checked as ``submit`` checks a run's consistency (no Hub needed),
    each written by the run its results.json describes (the run stamps); returns them."""
    from mmspubench.eval.results import read_finished_samples, recompute
    from mmspubench.eval.results_file import read_results_file
    from mmspubench.eval.run_stamp import check_samples_beside
    from mmspubench.eval.submit.checks import check_sample_consistency
    from mmspubench.eval.submit.submission import (
        check_ranges,
        check_replies,
        check_samples,
        compare_aggregates,
        view_sections,
    )

    where = str(run_dir / "results.json")
    results = read_results_file(run_dir / "results.json")
    samples = read_finished_samples(run_dir / "samples.jsonl")
    check_samples_beside(run_dir / "samples.jsonl", results, run_dir / "results.json")  # the run's own
    config = results.run_config(where)
    check_ranges(results, where)
    check_samples(tuple(samples), where)
    check_sample_consistency(samples, config, where)
    recomputed = recompute(samples, config)
    # The board shows the confound and interventions views' figures too (Gain, TC NAME, CF gap).
    for section in view_sections():
        compare_aggregates(results.section(section), recomputed.get(section), section, where)
    check_replies(results, recomputed, where)
    return samples


def checked_entries(
    folder: Path, entries: Sequence[leaderboard.RunEntry], explored: Mapping[str, Any] | None = None
) -> tuple[list[leaderboard.RunEntry], list[str]]:
    """The runs whose samples pass the checks (runs without samples kept, marked, once their
    figures are finite percentages; a run whose samples record reasoning marked ``thinking``), and
    the refusals; with ``explored`` (the identity of the
    dataset the Space explores), a run made on another dataset is refused
    (:func:`mmspubench.space.run_match.dataset_fault`)."""
    from mmspubench.eval.results_file import read_results_file
    from mmspubench.eval.submit.submission import check_ranges
    from mmspubench.space.run_match import dataset_fault

    kept, refused = [], []
    for entry in entries:
        run = str(entry.row["Run"])
        with_samples = (folder / run / "samples.jsonl").is_file()
        where = str(folder / run / "results.json")
        try:
            results = read_results_file(folder / run / "results.json")
            fault = dataset_fault(results, explored)
            if fault:
                raise MMSpuBenchError(fault)
            if with_samples:
                if replies_reason(check_run(folder / run)):  # the thinking mark (space/replies.py)
                    entry = replace(entry, row={**entry.row, "Mode": leaderboard.mode_cell(results, True)})
            else:  # no samples to recompute from: at least no -5% or 1e308% on the board
                check_ranges(results, where)
                check_intervention_cells(results.to_json(), where)
        except MMSpuBenchError as err:
            refused.append(f"run {run} left out: {err}")
            continue
        if with_samples:
            source = f"{RESULTS_SOURCE} run {run} (samples re-checked)"
        else:
            source = f"{RESULTS_SOURCE} run {run} (no samples.jsonl: not re-checked)"
        kept.append(replace(entry, row={**entry.row, "Source": source}))
    return kept, refused


def choose_hub(hub: Sequence[HubEntry]) -> tuple[dict[str, HubEntry], list[str]]:
    """One Hub entry per model id: a verified entry over a community one, and among entries of one
    state the first the Hub lists (its rank order); a note for each model with several."""
    chosen: dict[str, HubEntry] = {}
    count: dict[str, int] = {}
    for entry in hub:
        count[entry.model_id] = count.get(entry.model_id, 0) + 1
        held = chosen.get(entry.model_id)
        if held is None or (entry.verified and not held.verified):
            chosen[entry.model_id] = entry
    notes = [
        f"{model}: {n} Hub leaderboard entries; the {chosen[model].state} one listed first by the Hub is shown "
        f"({chosen[model].overall:.2f})"
        for model, n in count.items()
        if n > 1
    ]
    return chosen, notes


def run_key(entry: leaderboard.RunEntry) -> tuple[str, str, str, bool]:
    """Model id, prompt variant, answer mode (with ``(accuracy only)`` and the thinking mark: a
    model's runs with and without thinking are two rows) and whether the run is partial: two runs
    of one key are one row. The partial marker's own n is not part of it (a later
    ``--limit 5`` run replaces a ``--limit 2`` one), and the model's revision is not either."""
    marker = str(entry.row.get(leaderboard.PARTIAL) or "")
    mode = str(entry.row.get("Mode", ""))
    if marker:
        mode = mode.removesuffix(marker).removesuffix(", ")
    return entry.model_id, str(entry.row.get("Variant", "")), mode, bool(marker)


def latest_runs(entries: Sequence[leaderboard.RunEntry]) -> tuple[list[leaderboard.RunEntry], list[str]]:
    """One run per :func:`run_key` (the model's revision is not part of it: ``eval --model org/x``
    records the snapshot's sha, the Hub's entries none): the latest by ``created_at`` in full (two
    runs of one day are told apart by their time), then by run name; a note names each run a later
    one replaces. A partial run never replaces a full one."""
    latest: dict[tuple[str, str, str, bool], leaderboard.RunEntry] = {}
    notes = []
    for entry in sorted(entries, key=lambda e: (leaderboard.created_time(e), str(e.row["Run"]))):
        key = run_key(entry)
        if key in latest:
            kind = "partial run" if key[3] else "run"
            old, new = (str(e.row.get("Dataset revision", "")) for e in (latest[key], entry))
            on = (
                f" (on dataset revision {new or '?'}; the replaced run on {old or '?'})" if old != new else ""
            )
            notes.append(
                f"run {latest[key].row['Run']} not shown: run {entry.row['Run']} is a later {kind} of the "
                f"same model, prompt variant and answer mode{on}"
            )
        latest[key] = entry
    return list(latest.values()), notes


def _hub_row(entry: HubEntry) -> dict[str, Any]:
    row: dict[str, Any] = {c: math.nan for c in (*leaderboard.SCORE_COLUMNS, TOKENS)}
    row.update({c: "" for c in leaderboard.TEXT_COLUMNS})
    row[leaderboard.PARTIAL] = ""
    row.update(
        Model=leaderboard.model_link(entry.model_id),
        Overall=entry.overall,
        n=0,
        Revision=entry.revision,
        Source=f"{HUB_SOURCE} ({entry.state}): Overall and Hub Overall (the results dataset holds none of this model)",
        **{"Hub Overall": entry.overall, "Hub state": entry.state},
    )
    return row


def merge(entries: Sequence[leaderboard.RunEntry], hub: Sequence[HubEntry]) -> pd.DataFrame:
    """The results runs (one per model, variant and mode; :func:`latest_runs`) with the Hub's figure
    of their model id beside each (:func:`choose_hub`); a Hub model without a run is a row of its own."""
    chosen, _ = choose_hub(hub)
    rows = []
    for entry in latest_runs(entries)[0]:
        row = {"Hub Overall": math.nan, "Hub state": "", **entry.row}
        row.setdefault("Source", f"{RESULTS_SOURCE} run {entry.row['Run']}")
        found = chosen.get(entry.model_id)
        if found is not None:
            row["Hub Overall"], row["Hub state"] = found.overall, found.state
            row["Source"] = (
                f"{row['Source']}: every figure but Hub Overall; {HUB_SOURCE} ({found.state}): Hub Overall"
            )
        rows.append(row)
    with_runs = {e.model_id for e in entries}
    rows += [_hub_row(e) for model, e in chosen.items() if model not in with_runs]
    frame = pd.DataFrame(rows, columns=list(leaderboard.FRAME_COLUMNS))
    return leaderboard.sort_frame(frame, "Average", ascending=False)


def board(
    folder: Path | None,
    entries: Sequence[leaderboard.RunEntry],
    dataset_id: str,
    api: Any = None,
    explored: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, str]:
    """The merged leaderboard and its note (what was left out, where the figures come from); with
    ``explored``, only the runs made on that dataset (:func:`checked_entries`)."""
    kept, notes = checked_entries(folder, entries, explored) if folder is not None else ([], [])
    hub, hub_note = hub_entries(dataset_id, api)
    if hub_note:
        notes.insert(0, hub_note)
    notes += latest_runs(kept)[1] + choose_hub(hub)[1]
    if folder is not None and not entries:
        notes.append(f"the results folder holds no results.json (looked for {folder.name}/**/results.json)")
    frame = merge(kept, hub)
    revisions = sorted({str(r) for r in frame["Dataset revision"] if r})
    if len(revisions) > 1:
        notes.append(
            f"the runs shown are on {len(revisions)} dataset revisions ({', '.join(revisions)}): figures of "
            "different revisions are not comparable (column Dataset revision)"
        )
    return frame, "\n".join(f"- {escape_cell(n)}" for n in notes)


def benchmark_id(dataset: str | None) -> str:
    """Whose Hub leaderboard to read: the explored dataset when it is a Hub id, else the published one."""
    from mmspubench.dataset_builder.hub import is_hub_id
    from mmspubench.eval.submit.submission import PUBLISHED_DATASET_ID

    if dataset and is_hub_id(dataset) and "/" in dataset and not Path(dataset).exists():
        return dataset
    return PUBLISHED_DATASET_ID
