"""What the page shows without a model run: the Run tab's item preview and the results-run CGLA
of an opened item (Explore's chart fills on opening; live scoring stays behind "Show CGLA")."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import code_span, escape_cell
from mmspubench.space import cgla_view, explore, intervention_view
from mmspubench.space.handlers import SpaceState, cgla_sources, from_run, show_cgla, source_label
from mmspubench.space.replies import replies_reading, with_reply
from mmspubench.space.run_match import record_fault

if TYPE_CHECKING:
    from PIL.Image import Image

NO_RUN_NOTE = "No results run holds this item: press **Show CGLA** to compute it live with the Model chosen above the tabs."


def run_preview(state: SpaceState, item_id: str | None) -> tuple[Image | None, str]:
    """The picture, question and options the Run tab's "selected item" input will run on."""
    item_id = (item_id or "").strip()
    if item_id not in state.index.row_of:
        return None, "No item opened: open one in the Explore tab (or choose *my image*)."
    view = explore.item_view(state.dataset, state.index, item_id)
    options = "\n".join(
        f"- {letter}. {escape_cell(text)}" for letter, text in zip("ABCD", view.options, strict=False)
    )
    return view.pil_image, (
        f"**Will run on item {code_span(view.id)}**\n\n**Question:** {escape_cell(view.question)}\n\n{options}"
    )


def _run_holding(state: SpaceState, item_id: str, source: str | None) -> tuple[str, dict[str, Any]] | None:
    """The chosen results run when it holds the item (its CGLA, or a thinking run's reply with
    reasoning), else the first run (in the dropdown's order) that holds its CGLA."""
    names = [run for _, run in cgla_sources(state) if run in state.runs]
    if source in state.runs:
        names = [str(source), *(n for n in names if n != source)]
        chosen = _first_record(state, item_id, [str(source)], lambda r: replies_reading(r) is not None)
        if chosen is not None:
            return chosen
    return _first_record(state, item_id, names, lambda record: bool(record.get("conditions")))


def _first_record(
    state: SpaceState, item_id: str, names: list[str], wanted: Callable[[dict[str, Any]], bool]
) -> tuple[str, dict[str, Any]] | None:
    """The first of the runs ``names`` whose record of the item is ``wanted`` and is the item's own
    (a run of another dataset may hold another item under its id: never shown under this one)."""
    item = explore.item_view(state.dataset, state.index, item_id) if item_id in state.index.row_of else None
    for name in names:
        try:
            records = cgla_view.read_samples(state.runs[name])
        except MMSpuBenchError:
            continue
        record = records.get(item_id)
        if item is not None and record is not None and wanted(record) and not record_fault(record, item):
            return name, record
    return None


def results_cgla(
    state: SpaceState, item_id: str | None, source: str | None
) -> tuple[pd.DataFrame, str, dict[str, Any] | None]:
    """The CGL chart of the opened item from a results run holding it (the item's reply with its
    reasoning folded after the reading, when the record has reasoning; the chosen thinking run
    without CGLA: no chart, why, and the reply); an empty chart and a hint otherwise."""
    found = _run_holding(state, (item_id or "").strip(), source)
    if found is None:
        return pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS)), NO_RUN_NOTE, None
    name, record = found
    replies = replies_reading(record)
    if replies is not None:  # a thinking run offered for its replies only: no chart, and why
        return pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS)), from_run(state, name, replies), record
    try:
        frame, text = cgla_view.cgl_frame(record), cgla_view.cgla_markdown(record)
    except MMSpuBenchError as err:
        return pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS)), escape_cell(str(err)), None
    return frame, from_run(state, name, with_reply(text, record)), record


def chosen_cgla(
    state: SpaceState, item_id: str | None, source: str | None
) -> tuple[pd.DataFrame, str, dict[str, Any] | None]:
    """What Explore shows when "CGL from" changes: the chosen run's CGLA of the opened item, or an
    empty chart and why (the run holds no record of it; live scoring waits for "Show CGLA"), so
    no reading of the previous choice stays under the new one."""
    empty = pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS))
    item_id = (item_id or "").strip()
    if not item_id:
        return empty, "No item opened: open one above.", None
    if source not in state.runs:
        return (
            empty,
            f"Press **Show CGLA** to compute item {code_span(item_id)} live with the Model chosen above the tabs.",
            None,
        )
    try:
        # The reading "Show CGLA" gives for a run (its rotations and blind answer included).
        return show_cgla(state, item_id, source, None)
    except MMSpuBenchError as err:
        return empty, f"{escape_cell(str(err))}: choose another run, or live.", None


def _run_with_interventions(
    state: SpaceState, item_id: str, source: str | None
) -> tuple[str, dict[str, Any]] | None:
    """The chosen run when it asked the item under interventions, else the first table run that did."""
    names = list(state.runs)
    if source in state.runs:
        names = [str(source), *(n for n in names if n != source)]
    return _first_record(state, item_id, names, lambda record: record.get("interventions") is not None)


def show_interventions(
    state: SpaceState, item_id: str | None, source: str | None
) -> tuple[list[intervention_view.Panel], str]:
    """Explore's interventions gallery of the opened item and the text under it: the answers of the
    chosen run (or the first run that asked the item under interventions), or the item's own
    counterfactual images alone when no run did."""
    item_id = (item_id or "").strip()
    if item_id not in state.index.row_of:
        return [], "No item opened: open one above."
    item = explore.item_view(state.dataset, state.index, item_id)
    found = _run_with_interventions(state, item_id, source)
    record = found[1] if found else None
    gallery, notes = intervention_view.panels(item, record)
    label = source_label(state, found[0]) if found else None
    return gallery, intervention_view.reading(item, record, label, notes)
