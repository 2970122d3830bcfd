"""The Space's event handlers: plain functions of the app state and component values.

They return DataFrames, images, Markdown strings and dicts; ``layout.py`` binds them to
components and turns ``MMSpuBenchError`` into a message on the page.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import code_span, escape_cell
from mmspubench.space import cgla_view, confound_view, explore, leaderboard, live, run_match
from mmspubench.space.cgla_sources import cgla_choices, cgla_note
from mmspubench.space.replies import replies_reading, with_reply

if TYPE_CHECKING:
    import datasets
    from mmspubench.eval.analysis.plot_data import Series
    from PIL.Image import Image

LIVE_SOURCE = "live: compute with the Model chosen above the tabs"
"""CGLA source choice meaning "score the item now" rather than read a results run."""
LOG = logging.getLogger("mmspubench.space")
"""The Space's log (the page's wrapper, ``mmspubench.app_guard``, logs to the same)."""
SELECTED_ITEM, UPLOADED_IMAGE = "selected item", "my image"
"""Choices of the Run tab's input radio."""


@dataclass(frozen=True, slots=True)
class SpaceConfig:
    """Where the Space reads its data, and which models it offers."""

    dataset: str | None = None
    """Hub id or local folder; ``None`` for the bundled synthetic release."""
    results: str | None = None
    """Folder (or Hub dataset id) of runs for the leaderboard and the CGLA view; ``None`` for none."""
    hub_models: tuple[str, ...] = live.DEFAULT_HUB_MODELS
    """Hub model ids offered in the Run tab besides the bundled model."""
    max_queue: int = 1024
    """Most requests of any kind waiting in the page's queue (model runs are bounded separately)."""
    concurrency: int = 1
    """Model runs at once (CPU Spaces have a couple of cores); the model cache's lock enforces it."""
    cheap_concurrency: int = 8
    """Cheap events (explore, leaderboard, submit checks) of one kind handled at once."""
    unknown_keys: Literal["error", "ignore"] = "error"
    """What a raw release's keys outside ``raw.KEY_TABLE`` do (``MMSPUBENCH_UNKNOWN_KEYS``), as in ``build``."""

    @staticmethod
    def from_env() -> SpaceConfig:
        """``MMSPUBENCH_DATASET``, ``MMSPUBENCH_RESULTS`` and ``MMSPUBENCH_SPACE_MODELS`` (comma-separated)."""
        models = os.environ.get("MMSPUBENCH_SPACE_MODELS")
        return SpaceConfig(
            dataset=os.environ.get("MMSPUBENCH_DATASET") or None,
            results=os.environ.get("MMSPUBENCH_RESULTS") or None,
            hub_models=live.DEFAULT_HUB_MODELS
            if models is None
            else tuple(m.strip() for m in models.split(",") if m.strip()),
            unknown_keys="ignore" if os.environ.get("MMSPUBENCH_UNKNOWN_KEYS") == "ignore" else "error",
        )


@dataclass(frozen=True, slots=True)
class SpaceState:
    """Everything loaded once at start-up and shared by all visitors (read-only but the model cache)."""

    dataset: datasets.Dataset
    """The benchmark split being explored."""
    dataset_label: str
    """Where the dataset came from, for the page header."""
    index: explore.ItemIndex
    """Text index of the items."""
    board: pd.DataFrame
    """Full leaderboard table (all columns)."""
    runs: dict[str, Path] = field(default_factory=dict)
    """Run name -> samples.jsonl, for the CGLA view."""
    series: tuple[Series, ...] = ()
    """The leaderboard chart's bars per run (:func:`leaderboard.plot_series`, as ``report --plot``)."""
    models: live.ModelCache = field(default_factory=lambda: live.ModelCache(()))
    """Loaded-on-demand model for live runs."""
    board_note: str = ""
    """What the leaderboard left out and where its figures come from (Markdown, escaped)."""
    cgla_choices: tuple[tuple[str, str], ...] | None = None
    """(label, run) of the CGLA source dropdown (:func:`cgla_choices`: the runs with CGLA and the
    thinking runs without it, none when no run has either); ``None`` (a state made by hand): every
    run, by name."""
    cgla_note: str = ""
    """Why a table run is not offered in the CGLA source dropdown (:func:`cgla_note`, Markdown)."""


def load_state(config: SpaceConfig, models: live.ModelCache | None = None) -> SpaceState:
    """Load the dataset and the runs named by ``config``: only the runs made on that dataset are
    shown (:mod:`mmspubench.space.results_runs`)."""
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.space.results_runs import load_runs

    if config.dataset is None:
        from mmspubench.dataset_builder.defaults import default_dataset_dir

        source: str | Path = default_dataset_dir()
        label = "bundled synthetic release"
    else:
        source, label = config.dataset, config.dataset
    dataset, identity = load_pinned(source, split="test", unknown_keys=config.unknown_keys)
    runs = load_runs(config.results, config.dataset, identity)
    return SpaceState(
        dataset=dataset,
        dataset_label=label,
        index=explore.build_index(dataset),
        board=runs.board,
        runs=runs.samples,
        series=runs.series,
        models=models or live.ModelCache(config.hub_models),
        board_note=runs.note,
        cgla_choices=cgla_choices(runs.board, runs.samples),
        cgla_note=cgla_note(runs.board, runs.samples, runs.apart),
    )


# Explore ------------------------------------------------------------------------------------


def filter_items(
    state: SpaceState,
    types: Sequence[str] | None,
    source: str | None,
    class_name: str | None,
    query: str | None,
) -> pd.DataFrame:
    """Items matching the filters."""
    return explore.filter_items(state.index, types or [], source, class_name, query or "")


def selected_id(frame: pd.DataFrame | None, row: int) -> str:
    """The item id in row ``row`` of the items table as shown."""
    if frame is None or not 0 <= row < len(frame):
        raise MMSpuBenchError("no item in that row; filter or reload the table")
    return str(frame.iloc[row]["id"])


def open_item(state: SpaceState, item_id: str | None) -> tuple[Image, str, pd.DataFrame]:
    """Image, description and options table of one item."""
    if not item_id:
        raise MMSpuBenchError("no item selected; click a row of the table or type an id")
    view = explore.item_view(state.dataset, state.index, item_id)
    return view.pil_image, explore.item_markdown(view), explore.options_table(view)


def first_item(state: SpaceState) -> tuple[str, Image | None, str, pd.DataFrame | None]:
    """What the Explore tab opens on: the first item's id, image, description and options."""
    ids = state.index.frame["id"]
    if len(ids) == 0:
        return "", None, "", None
    first = str(ids.iloc[0])
    return (first, *open_item(state, first))


def cgla_sources(state: SpaceState) -> list[tuple[str, str]]:
    """Choices (label, value) of the CGLA source dropdown: the runs with samples, a standard run
    first (the default), then live scoring."""
    runs = state.cgla_choices
    if runs is None:
        runs = tuple((run, run) for run in sorted(state.runs))
    return [*runs, (LIVE_SOURCE, LIVE_SOURCE)]


def source_label(state: SpaceState, source: str) -> str:
    """How the dropdown names a run."""
    return next((label for label, run in cgla_sources(state) if run == source), source)


def _dataset_item(state: SpaceState, item_id: str) -> Any:
    from mmspubench.eval.data import row_to_item

    if item_id not in state.index.row_of:
        raise MMSpuBenchError(f"no item with id {item_id!r} in the dataset")
    return row_to_item(state.dataset[state.index.row_of[item_id]], state.dataset_label)


def show_cgla(
    state: SpaceState, item_id: str | None, source: str | None, model_choice: str | None
) -> tuple[pd.DataFrame, str, dict[str, Any]]:
    """CGL chart data, reading and record of the selected item, from a run or scored live; the
    reading ends with the item's reply and its reasoning folded when the record has reasoning
    (:func:`mmspubench.space.replies.reply_markdown`); a run's record without CGLA but with
    reasoning shows no chart, says why, and shows the reply
    (:func:`mmspubench.space.replies.replies_reading`)."""
    if not item_id:
        raise MMSpuBenchError("open an item first (Explore tab)")
    if source == LIVE_SOURCE or not source:
        result = state.models.run(model_choice or live.BUNDLED_CHOICE, _dataset_item(state, item_id))
        record = result.sample.to_json()
    else:
        if source not in state.runs:
            known = [label for label, _ in cgla_sources(state)]
            raise MMSpuBenchError(f"unknown results run {source!r}; choose one of {known}")
        records = cgla_view.read_samples(state.runs[source])
        if item_id not in records:
            raise MMSpuBenchError(f"run {source_label(state, source)!r} has no record of item {item_id!r}")
        record = records[item_id]
        fault = run_match.record_fault(record, explore.item_view(state.dataset, state.index, item_id))
        if fault:
            raise MMSpuBenchError(
                f"run {source_label(state, source)!r}: its record of item {item_id!r} is not this item "
                f"({fault}): the run was made on another dataset"
            )
        replies = replies_reading(record)  # a thinking run offered for its replies only
        if replies is not None:
            empty = pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS))
            return (
                empty,
                from_run(state, source, replies + _confounds(state, source, item_id, record)),
                record,
            )
        reading = cgla_view.cgla_markdown(record) + _confounds(state, source, item_id, record)
        return cgla_view.cgl_frame(record), from_run(state, source, with_reply(reading, record)), record
    scored = f"Computed live with {escape_cell(model_choice or live.BUNDLED_CHOICE)}. "
    return cgla_view.cgl_frame(record), with_reply(scored + cgla_view.cgla_markdown(record), record), record


CglaOutputs = tuple[pd.DataFrame, str, "dict[str, Any] | None"]
NOT_SHOWN = "**Not shown.**"


def cgla_on_page(show: Callable[..., CglaOutputs]) -> Callable[..., CglaOutputs]:
    """``show`` (:func:`show_cgla`) whose refusal of an expected situation (no item opened, a run
    without a record or CGLA of the item, a busy model) becomes ``**Not shown.** REASON`` in the
    reading, with the chart and the record emptied, instead of an error on every output; it is
    logged (INFO). Anything else is left to the page's wrapper, which logs it with its traceback."""

    @functools.wraps(show)
    def call(*args: Any) -> CglaOutputs:
        try:
            return show(*args)
        except MMSpuBenchError as err:
            LOG.info("show_cgla not shown: %s", err)
            return (
                pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS)),
                f"{NOT_SHOWN} {escape_cell(str(err))}",
                None,
            )

    return call


def _confounds(state: SpaceState, source: str, item_id: str, record: dict[str, Any]) -> str:
    """The item's rotations and blind answer in the run (empty when the run has neither view)."""
    from mmspubench.eval.results_file import read_results_file

    if record.get("rotations") is None and record.get("blind") is None:
        return ""
    config = read_results_file(state.runs[source].parent / "results.json").config or {}
    options = _dataset_item(state, item_id).options
    text = confound_view.confounds_markdown(record, options, str(config.get("blind_image") or "none"))
    return "\n\n" + text


def from_run(state: SpaceState, run: str, text: str) -> str:
    """A results run's CGLA reading, saying which run (as the dropdown names it) it comes from."""
    return f"From results run {code_span(source_label(state, run))}. {text}"


def show_prompts(record: dict[str, Any] | None) -> str:
    """The exact prompts of the CGLA record on display."""
    if not record:
        raise MMSpuBenchError("show a CGLA chart first; its prompts appear here")
    return cgla_view.prompts_markdown(record)


# Run ----------------------------------------------------------------------------------------


class RefusedInput(MMSpuBenchError):
    """A visitor's input the Run tab refuses (a bad upload, an empty field, no item): said on the
    page by :func:`refusal_on_page`; a failure of the model run itself (busy) stays an error."""


RunOutputs = tuple[str, pd.DataFrame, pd.DataFrame, str, "dict[str, Any] | None"]
NOT_RUN = "**Not run.**"


def refusal_on_page(run: Callable[..., RunOutputs]) -> Callable[..., RunOutputs]:
    """``run`` (:func:`run_model`) whose refused input becomes ``**Not run.** REASON`` in the answer
    area, where it stays (a fading message is missed), with the charts, the reading and the record
    emptied: nothing of an earlier run stays beside it."""

    @functools.wraps(run)
    def call(*args: Any) -> RunOutputs:
        try:
            return run(*args)
        except RefusedInput as err:
            empty_probs = pd.DataFrame(columns=["option", "probability", "chosen"])
            empty_cgl = pd.DataFrame(columns=list(cgla_view.CGL_COLUMNS))
            return f"{NOT_RUN} {escape_cell(str(err))}", empty_probs, empty_cgl, "", None

    return call


def run_model(
    state: SpaceState,
    model_choice: str | None,
    input_kind: str | None,
    item_id: str | None,
    upload: str | None,
    question: str | None,
    option_a: str | None,
    option_b: str | None,
    option_c: str | None,
    option_d: str | None,
    answer: str | None,
    class_name: str | None,
    core: str | None,
    spurious: str | None,
) -> RunOutputs:
    """Answer, option probabilities, CGL chart data, CGLA reading and record of one live run; an
    input it refuses (the upload, a field, no item) raises :class:`RefusedInput`."""
    try:
        if input_kind == UPLOADED_IMAGE:
            item = live.custom_item(
                live.load_upload(upload),
                question,
                [option_a, option_b, option_c, option_d],
                answer,
                class_name,
                core,
                spurious,
            )
        else:
            if not item_id:
                raise MMSpuBenchError("no item selected; open one in the Explore tab, or choose 'my image'")
            item = _dataset_item(state, item_id)
    except MMSpuBenchError as err:
        raise RefusedInput(str(err)) from None
    result = state.models.run(model_choice or live.BUNDLED_CHOICE, item)
    record = result.sample.to_json()
    return (
        result.answer_markdown,
        result.probabilities,
        cgla_view.cgl_frame(record),
        cgla_view.cgla_markdown(record),
        record,
    )


# Leaderboard --------------------------------------------------------------------------------


def leaderboard_table(
    state: SpaceState,
    query: str | None,
    columns: Sequence[str] | None,
    sort_by: str | None,
    ascending: bool | None,
) -> pd.DataFrame:
    """The leaderboard as shown: searched, sorted, chosen columns."""
    return leaderboard.view_frame(
        state.board, query or "", list(columns or []) or None, sort_by or "Average", bool(ascending)
    )


def leaderboard_plot(state: SpaceState) -> Any:
    """The comparison chart: ``report --plot``'s grouped bars of accuracy and CGLA_acc per type,
    with their intervals, one colour per run (a matplotlib figure; ``None`` without runs)."""
    if not state.series:
        return None
    from mmspubench.eval.analysis.plots import report_figure_object, require_matplotlib
    from mmspubench.space.charts import fit_report_figure

    figure = fit_report_figure(
        report_figure_object(state.series), state.series
    )  # legend inside, 0 bars marked
    require_matplotlib().close(figure)  # pyplot forgets it (no leak per visitor); Gradio still renders it
    return figure


# Submit -------------------------------------------------------------------------------------


def _check_size(label: str, path: str, limit: int) -> None:
    """An uploaded run file is a regular file of at most ``limit`` bytes; one line otherwise."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise MMSpuBenchError(f"upload {label}: cannot be read ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise MMSpuBenchError(f"upload {label}: not a regular file")
    if info.st_size > limit:
        raise MMSpuBenchError(
            f"upload {label}: {info.st_size} bytes; at most {limit} are accepted (a full run fits)"
        )


def validate_upload(
    results_file: str | None, samples_file: str | None, model_repo: str | None
) -> tuple[str, str]:
    """Run ``submit``'s validation on uploaded files; the verdict and the YAML the PR would add."""
    from mmspubench.eval.submit.submission import MAX_RESULTS_BYTES, MAX_SAMPLES_BYTES, validate_submission

    if not results_file or not samples_file:
        raise MMSpuBenchError("upload both results.json and samples.jsonl of the run")
    if not (model_repo or "").strip():
        raise MMSpuBenchError("type the model repo id (org/name) the results belong to")
    _check_size("results.json", results_file, MAX_RESULTS_BYTES)
    _check_size("samples.jsonl", samples_file, MAX_SAMPLES_BYTES)
    # submit reads samples.jsonl beside results.json: put both under their canonical names.
    with tempfile.TemporaryDirectory(prefix="mmspubench-submit-") as tmp:
        shutil.copyfile(results_file, Path(tmp) / "results.json")
        shutil.copyfile(samples_file, Path(tmp) / "samples.jsonl")
        try:
            submission = validate_submission(Path(tmp) / "results.json", (model_repo or "").strip())
        except MMSpuBenchError as err:
            # Name the uploaded files as the visitor knows them, not by the server's temporary folder.
            raise MMSpuBenchError(str(err).replace(f"{tmp}{os.sep}", "")) from None
    verdict = (
        f"**Valid.** {submission.n} samples, prompt variant `{submission.variant}`; every figure "
        "recomputed and equal. Dataset "
        f"`{submission.dataset_id}` at `{submission.dataset_revision[:12]}`. Open the pull request with:\n\n"
        f"```\nmmspubench submit results.json --model-repo {submission.model_repo}\n```"
    )
    return verdict, submission.yaml_text


PAGE_TERMS: tuple[tuple[str, str], ...] = (
    (
        "pass --dataset-revision SHA or set MMSPUBENCH_PUBLISHED_REVISION",
        "this Space's maintainer sets the published revision (the Space variable MMSPUBENCH_PUBLISHED_REVISION)",
    ),
    (
        "; pass --dataset-revision SHA",
        "; this Space's maintainer sets the published revision (the Space variable MMSPUBENCH_PUBLISHED_REVISION)",
    ),
    ("--model-repo ", "Model repo "),
    ("(rerun with another --prompt-variant)", "(rerun `mmspubench eval` with another --prompt-variant)"),
    ("; evaluate with --dataset ", "; run `mmspubench eval` on your machine with --dataset "),
    ("(no --limit)", "(a run of `mmspubench eval` without --limit)"),
)
"""submit's advice to a command-line user, as the Submit tab says it: a field of the page, the
Space's own setting, or the evaluation command the visitor runs on their machine."""


def page_terms(reason: str) -> str:
    """``reason`` (a ``submit`` refusal) in the Submit tab's terms (:data:`PAGE_TERMS`)."""
    for cli, page in PAGE_TERMS:
        reason = reason.replace(cli, page)
    return reason


def submit_verdict(
    results_file: str | None, samples_file: str | None, model_repo: str | None
) -> tuple[str, str]:
    """The Submit tab's verdict: :func:`validate_upload`'s, or the refusal's reason kept on the page
    (not a fading message), in the page's terms."""
    try:
        return validate_upload(results_file, samples_file, model_repo)
    except MMSpuBenchError as err:
        return f"**Not valid.** {escape_cell(page_terms(str(err)))}", ""
