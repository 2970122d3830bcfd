"""Turn the libraries' own progress bars off for a run with ``progress=False`` (``--no-progress``).

transformers draws a "Loading weights" bar and datasets a "Generating ... split" bar of their own;
each library's progress API switches them off for the duration of the run and back on after, so a
notebook that asked for a quiet run gets its bars back for the next cell.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager


@contextmanager
def _transformers_quiet() -> Iterator[None]:
    from transformers.utils import logging as tf_logging

    was_on = tf_logging.is_progress_bar_enabled()
    tf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            tf_logging.enable_progress_bar()


@contextmanager
def _datasets_quiet() -> Iterator[None]:
    from datasets import utils as ds_tqdm

    was_off = ds_tqdm.are_progress_bars_disabled()
    if not was_off:
        ds_tqdm.disable_progress_bars()
    try:
        yield
    finally:
        if not was_off:
            ds_tqdm.enable_progress_bars()


@contextmanager
def libraries_quiet(progress: bool) -> Iterator[None]:
    """While active and ``progress`` is false, transformers' and datasets' bars are off."""
    with ExitStack() as stack:
        if not progress:
            stack.enter_context(_datasets_quiet())
            if importlib.util.find_spec("transformers") is not None:  # not needed by --backend openai
                stack.enter_context(_transformers_quiet())
        yield
