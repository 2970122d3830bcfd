"""Optional packages and the extra that installs each: a minimal install names what to add.

``pip install mm-spubench`` (no extra) runs ``build``, ``synth`` and ``report``; ``eval`` needs the
``eval`` extra (torch, transformers), ``space`` the ``space`` extra (gradio). :func:`require`
checks before any work that the packages a command needs can be imported, and
:func:`missing_extra_error` turns a later ``ModuleNotFoundError`` of a known optional package into
the same one line (``mmspubench.cli`` applies it to every command).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from mmspubench.errors import MMSpuBenchError

EXTRA_OF = {
    "torch": "eval",
    "transformers": "eval",
    "accelerate": "eval",
    "tokenizers": "eval",
    "gradio": "space",
    "pandas": "space",
    "openai": "api",
    "xgrammar": "curate",
    "num2words": "models",
    "sentencepiece": "models",
}
"""Top-level module name -> the extra of pyproject.toml that installs it."""


def install_line(extra: str) -> str:
    """The command that installs an extra."""
    return f"pip install 'mm-spubench[{extra}]'"


def _message(command: str, module: str, extra: str) -> str:
    return (
        f"{command} needs the Python package {module!r}, which is not installed; "
        f"install the {extra!r} extra: {install_line(extra)}"
    )


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a broken or half-removed package counts as missing
        return True


def require(command: str, modules: Sequence[str], extra: str | None = None) -> None:
    """Refuse ``command`` with one line naming the extra when one of ``modules`` is missing.

    ``extra``: the extra to name (default: the one that installs the missing module).
    """
    for module in modules:
        if _missing(module):
            raise MMSpuBenchError(_message(command, module, extra or EXTRA_OF[module]))


def missing_extra_error(command: str, err: ModuleNotFoundError) -> MMSpuBenchError | None:
    """The one-line error for a missing optional package, or ``None`` when ``err`` is another module."""
    top = (err.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    return None if extra is None else MMSpuBenchError(_message(command, top, extra))
