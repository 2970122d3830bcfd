"""The page: components and their wiring. Logic lives in ``handlers.py``; this file only wires.

Every event has an ``api_name`` so ``gradio_client`` and the tests can call it; every handler
error reaches the visitor as a one-line ``gr.Error`` message, never a traceback; a handler whose
refusals are expected (the Run tab's inputs, "Show CGLA") says them on the page instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
import pandas as pd
from mmspubench.app_guard import guarded, named_like
from mmspubench.eval.submit.submission import MAX_RESULTS_BYTES, MAX_SAMPLES_BYTES
from mmspubench.markup import escape_cell
from mmspubench.space import board_widths, charts, handlers, leaderboard, live, preview, zerogpu
from mmspubench.space.handlers import SpaceConfig, SpaceState

TITLE = "MM-SpuBench"
INTRO = """# MM-SpuBench: spurious biases in multimodal LLMs
Browse the benchmark, see how a model's likelihood of the class name shifts between **core** and
**spurious** attributes of one picture (CGLA), run a small model live, and compare models.
"""

__all__ = ["LAUNCH_OPTIONS", "SpaceConfig", "build_app"]

MAX_THREADS = 64
"""Worker threads of the page: room for every waiting model run (``live.MAX_PENDING_RUNS``) and
the cheap events beside them."""
SYSTEM_FONTS: tuple[str, ...] = (
    "ui-sans-serif",
    "system-ui",
    "-apple-system",
    "'Segoe UI'",
    "Roboto",
    "'Helvetica Neue'",
    "Arial",
    "sans-serif",
)
"""The page's text font: the visitor's own system font. With Gradio's default web font (Source Sans
Pro, served in weights 400 and 600 only) the B of "SpuBench" and the A of "CGLA" were drawn smaller
than the letters beside them; a system font has every glyph in every weight and loads nothing."""
LAUNCH_OPTIONS: dict[str, Any] = {
    # One limit for every upload of the page: the largest file a form takes (a full run's
    # samples.jsonl); each handler then holds its own files to their own limit (pictures 5 MB).
    "max_file_size": max(live.MAX_UPLOAD_BYTES, MAX_SAMPLES_BYTES, MAX_RESULTS_BYTES),
    "show_error": False,
    "max_threads": MAX_THREADS,
    # Gradio's banner ends with "To create a public link, set `share=True`": this page is served
    # where it runs (a Hub Space, a local port), never through a tunnel. Quiet drops the banner;
    # each entry point prints where it serves in its own line.
    "share": False,
    "quiet": True,
    # The leaderboard's font size and cell padding, which its column widths assume.
    "css": board_widths.BOARD_CSS,
    # The table's monospace font stays Gradio's (its column widths assume its advance).
    "theme": gr.themes.Default(font=SYSTEM_FONTS),
}
"""``launch`` options of every entry point: uploads over the limit are refused before any handler runs."""


GALLERY_LAYOUT: dict[str, Any] = {
    # Tiles of one size whatever the count: Gradio's default widens two pictures (one intervention)
    # to half the page each, taller than the gallery, cropped, their captions below the fold.
    "columns": 6,
    "fit_columns": False,
    "height": 240,
    # The whole picture in its square tile: a cropped one would hide the change made to it.
    "object_fit": "contain",
}
"""Explore's interventions gallery: six tiles a row, each picture whole, its caption (the run's answer) on it."""


def _markdown(*args: Any, **kwargs: Any) -> gr.Markdown:
    """``gr.Markdown`` without LaTeX: math is typeset from the rendered text, where escaped data
    (a ``$$`` in a run's text) would be read again."""
    return gr.Markdown(*args, latex_delimiters=[], **kwargs)


def _dataframe(*args: Any, **kwargs: Any) -> gr.Dataframe:
    """``gr.Dataframe`` without LaTeX in its Markdown cells (see ``_markdown``)."""
    return gr.Dataframe(*args, latex_delimiters=[], **kwargs)


def with_figures(
    fn: Callable[..., tuple[Any, ...]], figures: dict[int, Callable[[pd.DataFrame], Any]]
) -> Callable[..., tuple[Any, ...]]:
    """``fn`` whose outputs at the positions of ``figures`` (chart frames) become their figures
    (``charts.cgl_figure``: the CGL axis framing its values; ``charts.probability_figure``)."""

    def call(*args: Any) -> tuple[Any, ...]:
        out = list(fn(*args))
        for position, figure in figures.items():
            out[position] = figure(out[position])
        return tuple(out)

    return named_like(call, fn)


def _chart(value: Any, label: str, elem_id: str) -> gr.Plot:
    """A matplotlib chart of the page (``charts``): drawn in full inside its frame, no Vega-Lite."""
    return gr.Plot(value, format="png", label=label, elem_id=elem_id)


def _explore_tab(state: SpaceState, model_choice: gr.Dropdown, concurrency: int) -> gr.Textbox:
    types, sources, classes = handlers.explore.filter_choices(state.index)
    with gr.Row():
        type_filter = gr.Dropdown(
            types, value=[types[0]], multiselect=True, label="Spurious type", elem_id="type-filter"
        )
        source_filter = gr.Dropdown(sources, value=sources[0], label="Source", elem_id="source-filter")
        class_filter = gr.Dropdown(classes, value=classes[0], label="Class", elem_id="class-filter")
        query = gr.Textbox(label="Search (id, class, question)", max_length=100, elem_id="explore-search")
    items = _dataframe(
        handlers.filter_items(state, [types[0]], sources[0], classes[0], ""),
        label="Items (click a row to open it)",
        interactive=False,
        max_height=320,
        elem_id="items-table",
    )
    first_id, first_image, first_text, first_options = handlers.first_item(state)
    with gr.Row():
        item_id = gr.Textbox(first_id, label="Item id", max_length=32, scale=3, elem_id="item-id")
        open_button = gr.Button("Open item", scale=1, elem_id="open-item")
    with gr.Row():
        image = gr.Image(
            first_image, label="Image", type="pil", interactive=False, height=320, elem_id="item-image"
        )
        with gr.Column():
            description = _markdown(first_text, elem_id="item-markdown")
            options = _dataframe(
                first_options, label="Options (✓ = correct)", interactive=False, elem_id="item-options"
            )
    _markdown("### The item's image, changed")
    first_gallery, first_changes = preview.show_interventions(
        state, first_id, handlers.cgla_sources(state)[0][1]
    )
    # PNG, not the default WebP: the changed pixels (noise, a blur) are shown as the model saw them.
    gallery = gr.Gallery(
        first_gallery,
        format="png",
        label="Published, intervened and counterfactual images (a run's answer under each)",
        **GALLERY_LAYOUT,
        interactive=False,
        elem_id="explore-interventions",
    )
    changes = _markdown(first_changes, elem_id="explore-interventions-text")
    _markdown("### CGLA of this item")
    with gr.Row():
        cgla_source = gr.Dropdown(
            handlers.cgla_sources(state),
            value=handlers.cgla_sources(state)[0][1],
            label="CGL from",
            scale=3,
            elem_id="cgla-source",
        )
        cgla_button = gr.Button("Show CGLA", scale=1, elem_id="show-cgla")
    # Why a run of the table is not offered, on the page (a fading message would be missed).
    _markdown(state.cgla_note, visible=bool(state.cgla_note), elem_id="cgla-source-note")
    # The opened item's CGLA from a results run holding it, shown without a click.
    first_frame, first_reading, first_record = preview.results_cgla(state, first_id, cgla_source.value)
    cgl_plot = _chart(charts.cgl_figure(first_frame), "CGL per condition", "explore-cgl-plot")
    cgla_text = _markdown(first_reading, elem_id="explore-cgla-text")
    record = gr.State(first_record)
    with gr.Accordion("Exact prompts", open=False):
        prompts_button = gr.Button("Show the exact prompts", elem_id="show-prompts")
        prompts = _markdown()

    filters: list[Any] = [type_filter, source_filter, class_filter, query]
    for component in filters:
        component.change(
            guarded(handlers.filter_items, state),
            filters,
            items,
            api_name=f"filter_{component.elem_id}".replace("-", "_"),
        )

    def select_row(frame: pd.DataFrame, evt: gr.SelectData) -> str:
        return guarded(handlers.selected_id)(frame, evt.index[0])

    open_fn, shown = guarded(handlers.open_item, state), [image, description, options]
    stored = with_figures(guarded(preview.results_cgla, state), {0: charts.cgl_figure})
    cgla_in, cgla_out = [item_id, cgla_source], [cgl_plot, cgla_text, record]
    changed, changed_out = guarded(preview.show_interventions, state), [gallery, changes]
    items.select(select_row, items, item_id, api_name="select_item").then(
        open_fn, item_id, shown, api_name="open_selected"
    ).then(stored, cgla_in, cgla_out, api_name="results_cgla_selected").then(
        changed, cgla_in, changed_out, api_name="interventions_selected"
    )
    open_button.click(open_fn, item_id, shown, api_name="open_item").then(
        stored, cgla_in, cgla_out, api_name="results_cgla"
    ).then(changed, cgla_in, changed_out, api_name="interventions")
    item_id.submit(open_fn, item_id, shown, api_name="open_item_by_id").then(
        stored, cgla_in, cgla_out, api_name="results_cgla_by_id"
    ).then(changed, cgla_in, changed_out, api_name="interventions_by_id")
    # A new choice replaces the reading of the previous one (or empties it, and says why).
    cgla_source.change(
        with_figures(guarded(preview.chosen_cgla, state), {0: charts.cgl_figure}),
        cgla_in,
        cgla_out,
        api_name="chosen_cgla",
    ).then(changed, cgla_in, changed_out, api_name="chosen_interventions")
    cgla_button.click(
        with_figures(
            guarded(handlers.cgla_on_page(zerogpu.live_cgla_on_gpu(handlers.show_cgla)), state),
            {0: charts.cgl_figure},
        ),
        [item_id, cgla_source, model_choice],
        [cgl_plot, cgla_text, record],
        api_name="show_cgla",
        # Not limited here: the model cache admits a bounded number and refuses the rest as busy.
        concurrency_limit=None,
        concurrency_id="model",
    )
    prompts_button.click(guarded(handlers.show_prompts), record, prompts, api_name="show_prompts")
    return item_id


def _run_tab(state: SpaceState, model_choice: gr.Dropdown, item_id: gr.Textbox, concurrency: int) -> None:
    _markdown(
        "Run a model on the item opened in the Explore tab, or on your own picture with your own question, "
        f"options and attributes (PNG/JPEG/WebP up to {live.MAX_UPLOAD_BYTES // 2**20} MB; texts up to "
        f"{live.MAX_TEXT_CHARS} characters; 1-5 attributes, one per line)."
    )
    first_image, first_text = preview.run_preview(state, item_id.value)
    with gr.Row():
        run_image = gr.Image(
            first_image,
            label="Selected item (what 'selected item' runs on)",
            type="pil",
            interactive=False,
            height=240,
            elem_id="run-item-image",
        )
        run_text = _markdown(first_text, elem_id="run-item-text")
    item_id.change(
        guarded(preview.run_preview, state), item_id, [run_image, run_text], api_name="run_preview"
    )
    input_kind = gr.Radio(
        [handlers.SELECTED_ITEM, handlers.UPLOADED_IMAGE],
        value=handlers.SELECTED_ITEM,
        label="Input",
        elem_id="run-input",
    )
    with gr.Accordion("My image", open=False):
        with gr.Row():
            # A plain file: gradio does not decode it; live.load_upload checks the bytes first.
            upload = gr.File(label="Picture (PNG, JPEG or WebP)", type="filepath", elem_id="upload")
            with gr.Column():
                question = gr.Textbox(label="Question", max_length=live.MAX_TEXT_CHARS)
                opts = [
                    gr.Textbox(label=f"Option {letter}", max_length=live.MAX_TEXT_CHARS) for letter in "ABCD"
                ]
                answer = gr.Radio(list("ABCD"), value="A", label="Correct option")
        with gr.Row():
            class_name = gr.Textbox(label="Class name", max_length=live.MAX_TEXT_CHARS)
            core = gr.Textbox(
                label="Core attributes (one per line)", lines=3, max_length=5 * live.MAX_TEXT_CHARS
            )
            spurious = gr.Textbox(
                label="Spurious attributes (one per line)", lines=3, max_length=5 * live.MAX_TEXT_CHARS
            )
    run_button = gr.Button("Run model", variant="primary", elem_id="run-model")
    answer_text = _markdown(elem_id="run-answer")
    with gr.Row():
        probs = _chart(None, "Option probabilities", "run-probs")
        cgl_plot = _chart(None, "CGL per condition", "run-cgl-plot")
    cgla_text = _markdown(elem_id="run-cgla-text")
    record = gr.State(None)
    with gr.Accordion("Exact prompts", open=False):
        prompts_button = gr.Button("Show the exact prompts")
        prompts = _markdown()
    run_button.click(
        with_figures(
            guarded(handlers.refusal_on_page(zerogpu.on_gpu(handlers.run_model)), state),
            {1: charts.probability_figure, 2: charts.cgl_figure},
        ),
        [model_choice, input_kind, item_id, upload, question, *opts, answer, class_name, core, spurious],
        [answer_text, probs, cgl_plot, cgla_text, record],
        api_name="run",
        # Not limited here: the model cache admits a bounded number and refuses the rest as busy.
        concurrency_limit=None,
        concurrency_id="model",
    )
    prompts_button.click(guarded(handlers.show_prompts), record, prompts, api_name="run_prompts")


def _leaderboard_tab(state: SpaceState) -> None:
    with gr.Row():
        query = gr.Textbox(label="Search models", max_length=100, scale=2, elem_id="board-search")
        sort_by = gr.Dropdown(
            [
                *leaderboard.SCORE_COLUMNS,
                leaderboard.TOKENS,
                *leaderboard.CONFOUND_FIGURES,
                *leaderboard.INTERVENTION_COLUMNS,
                "n",
                "Date",
            ],
            value="Average",
            label="Sort by",
            scale=1,
            elem_id="board-sort",
        )
        ascending = gr.Checkbox(label="Ascending", value=False, scale=1, elem_id="board-ascending")
    columns = gr.CheckboxGroup(
        list(leaderboard.ALL_COLUMNS),
        value=list(leaderboard.DEFAULT_COLUMNS),
        label="Columns",
        elem_id="board-columns",
    )
    initial = handlers.leaderboard_table(state, "", None, "Average", False)
    table = _dataframe(
        leaderboard.styled(initial),
        datatype=leaderboard.column_datatypes(list(initial.columns)),
        column_widths=board_widths.column_widths(list(initial.columns), initial),
        interactive=False,
        wrap=True,
        label="Runs (accuracy in %)",
        elem_id="board-table",
    )
    _markdown(
        "Average = mean of the nine per-type accuracies (Table 2); Overall = item-level accuracy. One row "
        "per run (the latest of a model, prompt variant, answer mode and thinking); a partial run (`eval "
        "--limit`) says `partial (n=2 of 90)` in Mode, is ranked after every full run and never replaces "
        "one. The chart below draws the same runs. "
        "Mode says `thinking` for a run whose model thought before answering (results.json `model.thinking` "
        "mode `on`, or replies with reasoning); Tokens (in Columns): mean output tokens per reply, "
        "reasoning included, of a generate-mode run that counted them. "
        "Source: where each figure comes from (the row's results-dataset run, its samples re-checked; or the "
        "Hub's leaderboard of `mcq_accuracy` for the model id, a verified entry over a community one, in "
        "Hub Overall). "
        "TC NAME (a run of the interventions view): the targeted contrast of that image intervention, the "
        "change of accuracy on the items of the types it targets minus the change on the other items, in "
        "points; CF gap: accuracy on the cue-aligned counterfactuals minus on the published images, in points."
    )
    _markdown(state.board_note or "- Results dataset and Hub leaderboard both read.", elem_id="board-note")
    # The same grouped bars as `mmspubench report --plot` (eval.plot_data's data, eval.plots' figure).
    plot = gr.Plot(
        handlers.leaderboard_plot(state),
        format="png",
        label="Accuracy and CGLA_acc per spurious type (bootstrap 95% intervals)",
        elem_id="board-plot",
    )
    controls: list[Any] = [query, columns, sort_by, ascending]
    view = guarded(handlers.leaderboard_table, state)

    def show(*values: Any) -> gr.Dataframe:
        # The Model cell is a Markdown link; the datatypes follow the columns the visitor kept.
        frame = view(*values)
        shown = list(frame.columns)
        return _dataframe(
            leaderboard.styled(frame),
            datatype=leaderboard.column_datatypes(shown),
            column_widths=board_widths.column_widths(shown, frame),
        )

    show = named_like(show, handlers.leaderboard_table, 1)
    for component in controls:
        component.change(show, controls, table, api_name=f"leaderboard_{component.elem_id}".replace("-", "_"))
    refresh = gr.Button("Refresh plot", size="sm")
    refresh.click(guarded(handlers.leaderboard_plot, state), None, plot, api_name="leaderboard_plot")


def _submit_tab() -> None:
    _markdown(
        "Check a run before submitting it: the same validation as `mmspubench submit` (every figure is "
        "recomputed from samples.jsonl and must match, every sample is compared with the published item), "
        "and the `.eval_results/mm-spubench.yaml` it would add. samples.jsonl up to "
        f"{MAX_SAMPLES_BYTES // 2**20} MB (a full run fits), results.json up to {MAX_RESULTS_BYTES // 2**20} MB."
    )
    with gr.Row():
        results_file = gr.File(label="results.json", file_types=[".json"], elem_id="submit-results")
        samples_file = gr.File(label="samples.jsonl", file_types=[".jsonl"], elem_id="submit-samples")
    model_repo = gr.Textbox(label="Model repo (org/name)", max_length=96, elem_id="submit-repo")
    button = gr.Button("Validate", elem_id="submit-validate")
    verdict = _markdown(elem_id="submit-verdict")
    yaml_text = gr.Code(language="yaml", label=".eval_results/mm-spubench.yaml", interactive=False)
    button.click(
        guarded(handlers.submit_verdict),
        [results_file, samples_file, model_repo],
        [verdict, yaml_text],
        api_name="validate_submission",
    )


def build_app(config: SpaceConfig | None = None, state: SpaceState | None = None) -> gr.Blocks:
    """The whole Space; ``state`` is loaded from ``config`` unless given (tests pass their own)."""
    config = config or SpaceConfig()
    state = state or handlers.load_state(config)
    with gr.Blocks(title=TITLE) as demo:
        _markdown(INTRO + f"\nDataset: **{escape_cell(state.dataset_label)}** ({len(state.dataset)} items).")
        model_choice = gr.Dropdown(
            list(state.models.allowed), value=live.BUNDLED_CHOICE, label="Model", elem_id="model-choice"
        )
        with gr.Tabs():
            with gr.Tab("Explore", id="explore"):
                item_id = _explore_tab(state, model_choice, config.concurrency)
            with gr.Tab("Run", id="run"):
                _run_tab(state, model_choice, item_id, config.concurrency)
            with gr.Tab("Leaderboard", id="leaderboard"):
                _leaderboard_tab(state)
            with gr.Tab("Submit", id="submit"):
                _submit_tab()
    # Cheap reads run several at a time; model runs have their own bounded queue (live.ModelCache).
    demo.queue(max_size=config.max_queue, default_concurrency_limit=config.cheap_concurrency)
    return demo
