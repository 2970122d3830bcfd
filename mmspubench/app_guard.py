"""The handler wrapper of the Gradio apps (the Space, curate's review app): no traceback reaches a visitor.

Below both apps (neither imports the other); it imports Gradio, so only an app's page imports it.
A bad input (``MMSpuBenchError``) becomes its one-line message, anything else one line naming the
handler (the traceback goes to the log). Gradio shows an error's text as HTML: it is escaped, as
it may quote a run, a dataset or what someone typed.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import escape_html

LOG = logging.getLogger("mmspubench.space")


def named_like(call: Callable[..., Any], fn: Callable[..., Any], bound: int = 0) -> Callable[..., Any]:
    """``call`` carrying ``fn``'s name and parameters (less the first ``bound``), so the page's API
    (``gradio_client``, the "Use via API" page) names each input as the handler does, not ``param_0``."""
    params = list(inspect.signature(fn).parameters.values())[bound:]
    call.__name__ = fn.__name__
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(annotation=inspect.Parameter.empty) for p in params]
    )
    return call


def guarded(fn: Callable[..., Any], *bound: Any) -> Callable[..., Any]:
    """``fn`` with ``bound`` first arguments, turning any failure into a readable ``gr.Error``."""

    def call(*args: Any) -> Any:
        try:
            return fn(*bound, *args)
        except MMSpuBenchError as err:
            raise gr.Error(escape_html(str(err)), print_exception=False) from None
        except gr.Error:
            raise
        except Exception as err:
            # Unexpected failures are logged for the maintainer; the visitor sees one line.
            LOG.exception("handler %s failed", fn.__name__)
            message = f"internal error in {fn.__name__} ({type(err).__name__}: {err})"
            raise gr.Error(escape_html(message), print_exception=False) from None

    return named_like(call, fn, len(bound))
