"""The review app's page: components and wiring only (logic in ``review_handlers.py``).

Errors reach the annotator as one-line messages through the apps' ``guarded`` wrapper (``mmspubench.app_guard``), HTML-escaped
(Gradio renders an error's text as HTML, and the message may quote what someone typed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
from mmspubench.app_guard import guarded
from mmspubench.curate import review_handlers as h
from mmspubench.curate.names import MAX_NAME
from mmspubench.curate.review_db import DECISIONS, RATINGS
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, TYPE_NAMES
from mmspubench.markup import escape_markdown

TITLE = "MM-SpuBench review"
CONCURRENCY = 8
"""Requests the app's queue runs at once."""


def _show(draft: h.Draft, db: Path, annotator: str, status: str) -> tuple[Any, ...]:
    """Everything the page shows for the annotator's next item (or the end of the queue)."""
    item_id = h.next_item(draft, db, annotator)
    progress = h.progress(draft, db, annotator)
    if item_id is None:
        blank = [gr.update()] * 13
        return (None, None, "### All items reviewed. Thank you!", *blank, progress, status)
    image, markdown, fields, provenance = h.item_view(draft, item_id)
    return (
        item_id,
        image,
        markdown,
        fields["question"],
        *fields["options"],
        fields["answer"],
        fields["class_name"],
        "\n".join(fields["core_attributes"]),
        "\n".join(fields["spurious_attributes"]),
        fields["spurious_types"],
        provenance,
        None,
        None,
        progress,
        status,
    )


def _edit_form() -> list[Any]:
    """The editable fields, in the order ``review_handlers.submit`` reads them."""
    gr.Markdown("### Edit (validated as `build` would when you submit)")
    question = gr.Textbox(label="Question", lines=2, elem_id="edit-question")
    with gr.Row():
        options = [gr.Textbox(label=f"Option {x}", elem_id=f"edit-option-{x}") for x in ANSWER_LETTERS]
    with gr.Row():
        answer = gr.Radio(list(ANSWER_LETTERS), label="Answer", elem_id="edit-answer")
        class_name = gr.Textbox(label="Class name", elem_id="edit-class")
    with gr.Row():
        core = gr.Textbox(label="Core attributes (one per line)", lines=3, elem_id="edit-core")
        spurious = gr.Textbox(label="Spurious attributes (one per line)", lines=3, elem_id="edit-spurious")
    types = gr.CheckboxGroup(list(TYPE_NAMES), label="Spurious types (1-2)", elem_id="edit-types")
    return [question, *options, answer, class_name, core, spurious, types]


def build_review_app(draft: h.Draft, db: Path) -> gr.Blocks:
    """The review page for one draft and database."""

    def begin(annotator: str) -> tuple[Any, ...]:
        return _show(draft, db, annotator, "")

    def send(
        annotator: str, item_id: str, rating: Any, decision: Any, comment: str, *form_values: Any
    ) -> tuple[Any, ...]:
        names = ["question", *(f"option_{x}" for x in ANSWER_LETTERS), "answer", "class_name",
                 "core_attributes", "spurious_attributes", "spurious_types"]  # fmt: skip
        form = dict(zip(names, form_values, strict=True))
        seq = h.submit(draft, db, annotator, item_id, rating, decision, comment, form)
        return _show(draft, db, annotator, f"Saved review #{seq} of item {escape_markdown(item_id)}.")

    with gr.Blocks(title=TITLE, analytics_enabled=False) as app:
        gr.Markdown(f"# {TITLE}\nRate each draft item 1-5, fix any field, accept or reject it.")
        with gr.Row():
            annotator = gr.Textbox(label="Your name", max_length=MAX_NAME, elem_id="annotator", scale=3)
            start = gr.Button("Start", elem_id="start", scale=1)
        progress = gr.Markdown(elem_id="progress")
        item_id = gr.State(None)
        with gr.Row():
            image = gr.Image(
                label="Image", type="filepath", interactive=False, height=320, elem_id="review-image"
            )
            markdown = gr.Markdown(elem_id="review-item")
        with gr.Accordion("Provenance (model, prompt, raw output)", open=False):
            provenance = gr.Code(language="json", elem_id="provenance")
        form = _edit_form()
        with gr.Row():
            rating = gr.Radio(
                [str(r) for r in RATINGS], label="Rating (1 = unusable, 5 = excellent)", elem_id="rating"
            )
            decision = gr.Radio(list(DECISIONS), label="Decision", elem_id="decision")
        comment = gr.Textbox(label="Comment", lines=2, elem_id="comment")
        submit = gr.Button("Submit review", variant="primary", elem_id="submit")
        status = gr.Markdown(elem_id="status")

        shown = [item_id, image, markdown, *form, provenance, rating, decision, progress, status]
        start.click(guarded(begin), [annotator], shown, api_name="start")
        submit.click(
            guarded(send),
            [annotator, item_id, rating, decision, comment, *form],
            shown,
            api_name="submit",
        ).success(lambda: "", None, comment)
    return app


def serve(app: gr.Blocks, draft: h.Draft, *, host: str, port: int, block: bool = True) -> gr.Blocks:
    """Start serving ``app``; the folders of the draft's images are the only ones it may serve from
    besides its own cache (Gradio copies each image there once, then serves the copy)."""
    folders = sorted({str(h.image_file(record).parent) for record in draft.records})
    app.queue(default_concurrency_limit=CONCURRENCY).launch(
        server_name=host,
        server_port=port,
        show_error=False,
        allowed_paths=folders,
        prevent_thread_lock=not block,
        quiet=not block,
    )
    return app


def launch_review(draft_folder: Path, db: Path, *, host: str = "127.0.0.1", port: int = 7861) -> None:
    """Validate the draft, open the database, then serve the app until interrupted."""
    draft = h.start(draft_folder, db)
    serve(build_review_app(draft, Path(db)), draft, host=host, port=port)
