"""Checks of a model folder at load time, so that a broken folder is one line before any item runs.

- the chat template renders both of the benchmark's prompts (a template that raises, or does not
  parse, fails here and not in the middle of the run);
- the tokenizer has a pad token (batches are padded, a batch of one too: the processor pads);
- the tokenizer's ids fit the model's embedding table (a vocabulary larger than the config's
  ``vocab_size`` would index past it);
- weights that are truncated or whose shapes do not match the config are one line
  (:func:`weights_error`), and transformers' load report is shown only when the load succeeded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mmspubench.errors import MMSpuBenchError, first_line
from mmspubench.eval import prompts
from mmspubench.eval.checkpoint.hooks import FamilyHooks

_TEMPLATE_FAILURES = (TypeError, ValueError, KeyError, IndexError, AttributeError)
"""What a broken template raises besides jinja2's own errors (e.g. a filter applied to None)."""


def check_template(name: str, processor: Any, hooks: FamilyHooks) -> None:
    """Render the multiple-choice and the CGL prompt once; one line if the template fails."""
    import jinja2
    from mmspubench.eval.checkpoint.chat import render_chat

    probes = [
        prompts.mcq_prompt("Which object is shown?", ("cat", "dog", "car", "cup"), "generate"),
        prompts.mcq_prompt("Which object is shown?", ("cat", "dog", "car", "cup"), "logprob"),
        prompts.cgla_prompt("red"),
    ]
    for probe in probes:
        try:
            render_chat(processor, hooks, probe)
        except (jinja2.TemplateError, *_TEMPLATE_FAILURES) as err:
            raise MMSpuBenchError(
                f"model {name!r}: its chat template fails on the benchmark's prompt (system turn, then a "
                f"user turn with an image and text) ({type(err).__name__}: {first_line(err, 300)}); fix "
                "chat_template.jinja or the processor's chat_template"
            ) from None


def check_pad_token(name: str, processor: Any) -> None:
    """Refuse a tokenizer without a pad token (the processor pads every batch, one prompt too)."""
    if getattr(processor.tokenizer, "pad_token", None) is None:
        raise MMSpuBenchError(
            f"model {name!r}: its tokenizer has no pad token; set one and save the tokenizer again "
            "(tokenizer.pad_token = tokenizer.eos_token; tokenizer.save_pretrained(folder))"
        )


def check_vocabulary(name: str, net: Any, processor: Any) -> None:
    """Refuse a tokenizer with more ids than the model's input embedding table has rows."""
    embeddings = net.get_input_embeddings()
    rows = getattr(embeddings, "num_embeddings", None)
    size = len(processor.tokenizer)
    if isinstance(rows, int) and size > rows:
        raise MMSpuBenchError(
            f"model {name!r}: its tokenizer has {size} tokens but the model's embedding table only {rows} "
            "rows (config.json vocab_size too small for the tokenizer); expected a tokenizer and model "
            "saved together"
        )


def weights_error(name: str, err: BaseException) -> MMSpuBenchError | None:
    """The one line for weights that cannot be read or do not fit the config; ``None``: another error."""
    from safetensors import SafetensorError

    if isinstance(err, SafetensorError):
        return MMSpuBenchError(
            f"model {name!r}: its weights file is damaged or truncated ({first_line(err, 300)}); download or "
            "save the model again"
        )
    text = str(err)
    if isinstance(err, RuntimeError) and ("mismatch" in text or "loading state_dict" in text):
        return MMSpuBenchError(
            f"model {name!r}: its weights do not match its config.json (a tensor's shape differs, e.g. "
            "vocab_size or hidden_size edited); expected the config the weights were saved with"
        )
    return None


class _HeldReports(logging.Filter):
    """Holds back transformers' load reports until the load is known to have succeeded."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in record.getMessage():
            self.held.append(record)
            return False
        return True


@contextmanager
def held_load_report() -> Iterator[Callable[[], None]]:
    """While active, transformers' load report is held; call the yielded function to show it."""
    logger = logging.getLogger("transformers.modeling_utils")
    held = _HeldReports()
    logger.addFilter(held)

    def release() -> None:
        logger.removeFilter(held)
        for record in held.held:
            logger.handle(record)
        held.held.clear()

    try:
        yield release
    finally:
        logger.removeFilter(held)
