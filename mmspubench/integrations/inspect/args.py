"""The Inspect task's ``-T`` options, checked as ``mmspubench eval`` checks the same flags.

Each task argument stands for a ``RunConfig`` field (``-T limit`` for ``--limit``, ``-T max_tokens``
for ``--max-new-tokens``...); its value is checked with that field's own type, range and choices
(``eval.config_checks.check_field``), so ``-T max_tokens=0`` and ``-T limit=abc`` are refused
exactly where ``--max-new-tokens 0`` and ``--limit abc`` are. The task calls the check before it
reads the dataset, and the provider loads its weights only on the first request, so a bad option
is reported before anything slow. A refusal is :class:`TaskOptionError`: Inspect's command line
prints such an error as its one-line message, not as a traceback.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.config_checks import check_field
from mmspubench.eval.intervention_names import check_names, parse_names
from mmspubench.options import choices_of

try:  # Inspect prints this kind as its message alone (no traceback, no exception group)
    from inspect_ai._util.error import PrerequisiteError as _InspectOneLine
except ImportError:  # pragma: no cover - another Inspect version: a plain error
    _InspectOneLine = Exception  # type: ignore[misc,assignment]

FIELDS = {
    "dataset": "dataset",
    "revision": "dataset_revision",
    "split": "split",
    "prompt_variant": "prompt_variant",
    "limit": "limit",
    "max_tokens": "max_new_tokens",
    "blind_image": "blind_image",
}
"""Task argument -> the ``RunConfig`` field (the ``mmspubench eval`` flag) it is checked as."""


class TaskOptionError(MMSpuBenchError, _InspectOneLine):
    """A bad ``-T`` option (or dataset) of the Inspect task: one line."""

    def __init__(self, message: str) -> None:
        MMSpuBenchError.__init__(self, message)
        self.message = message


def _flag(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _reason(message: str, name: str, field_name: str, value: Any) -> str:
    """``check_field``'s message without its flag and value, plus how to give a text."""
    flag = _flag(field_name)
    for prefix in (f"{flag} {value!r}: ", f"{flag}: ", f"{flag} "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
            break
    if isinstance(value, list):
        message += f" (Inspect splits a value at its commas; quote it: -T '{name}=\"...\"')"
    elif "expected a text" in message:
        message += f" (Inspect read it as {type(value).__name__}; quote it: -T '{name}=\"{value}\"')"
    return f"{message} (as {flag})"


def check_task_arg(name: str, value: Any) -> None:
    """Refuse ``-T name=value`` as ``mmspubench eval`` refuses the flag it stands for (one line)."""
    field_name = FIELDS[name]
    f = next(x for x in dataclasses.fields(RunConfig) if x.name == field_name)
    hint = typing.get_type_hints(RunConfig)[field_name]
    try:
        check_field(f, hint, value)
    except MMSpuBenchError as err:
        raise MMSpuBenchError(f"-T {name}={value!r}: {_reason(str(err), name, field_name, value)}") from None
    allowed = choices_of(f)
    if allowed is not None and value is not None and value not in allowed:
        raise MMSpuBenchError(f"-T {name}={value!r}: expected one of {', '.join(allowed)}")


def check_task_args(args: Mapping[str, Any]) -> None:
    """Check every task argument given (see :data:`FIELDS`)."""
    for name, value in args.items():
        check_task_arg(name, value)


def check_views(circular: Any, blind: Any, blind_image: str) -> None:
    """``-T circular`` and ``-T blind`` are true or false; ``-T blind_image=grey`` needs ``-T blind=true``
    (as ``--blind-image`` needs ``--metrics ...,blind``)."""
    for name, value in (("circular", circular), ("blind", blind)):
        if not isinstance(value, bool):
            raise MMSpuBenchError(f"-T {name}={value!r}: expected true or false")
    if blind_image != "none" and not blind:
        raise MMSpuBenchError(
            f"-T blind_image={blind_image!r}: is used only with -T blind=true (as --blind-image)"
        )


def check_interventions(value: Any) -> tuple[str, ...]:
    """``-T interventions=``: ``None`` (not given) is none; else names checked as ``--interventions``
    checks them (Inspect hands ``grayscale,blur`` over as a list, ``grayscale`` as a text)."""
    if value is None:
        return ()
    try:
        if isinstance(value, str):
            names = parse_names(value) or check_names(())
        elif isinstance(value, list):  # Inspect splits "grayscale, blur" into 'grayscale' and ' blur'
            names = check_names([n.strip() if isinstance(n, str) else n for n in value])
        else:
            raise MMSpuBenchError(f"--interventions: {type(value).__name__} is not a list of names")
    except MMSpuBenchError as err:
        reason = str(err).removeprefix("--interventions: ")
        if isinstance(value, str):  # parse_names names the text itself: "--interventions 'TEXT': ..."
            reason = reason.removeprefix(f"--interventions {value[:80]!r}: ")
        raise MMSpuBenchError(f"-T interventions={value!r}: {reason} (as --interventions)") from None
    return names
