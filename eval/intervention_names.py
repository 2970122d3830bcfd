"""The names ``--interventions`` takes: built-in image transforms and the dataset's counterfactuals.

- a built-in name (:data:`BUILTIN_NAMES`, the transforms of :mod:`mmspubench.eval.interventions`);
- ``cf:NAME``: the counterfactual image called ``NAME`` that every item of the dataset ships (the
  records' optional ``counterfactuals`` field; ``synth --counterfactuals`` writes ``cue-aligned``,
  ``cue-random`` and ``cue-removed``);
- ``cf:*``: each item's own counterfactuals, whatever their names (an item without any is asked
  with none; each name's figures count the items that ship it).

A sample records each intervention it was asked under by its name as given, ``cf:*`` expanded to
the item's ``cf:NAME`` entries in the dataset's order (:func:`expected_names`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.interventions import INTERVENTIONS
from mmspubench.options import did_you_mean

BUILTIN_NAMES: tuple[str, ...] = tuple(INTERVENTIONS)
"""The built-in interventions in their documented order (the default of ``--interventions``)."""
CF_PREFIX = "cf:"
"""Prefix of a counterfactual's name on the command line and in result files."""
CF_ALL = "cf:*"
"""Every counterfactual each item ships."""
CF_NAME = re.compile(r"[a-z0-9-]+")
"""A counterfactual's name (as the record schema allows it)."""
MAX_NAMES = 32
"""Most interventions of one run (each is one more pass over every item)."""


def _fault(name: str) -> str | None:
    """Why ``name`` is not an intervention name, or ``None``."""
    if name in INTERVENTIONS or name == CF_ALL:
        return None
    if name.startswith(CF_PREFIX):
        rest = name[len(CF_PREFIX) :]
        if CF_NAME.fullmatch(rest):
            return None
        return (
            f"{name[:60]!r}: a counterfactual's name is lower-case letters, digits and '-' (cf:NAME or cf:*)"
        )
    hint = did_you_mean(name, (*BUILTIN_NAMES, CF_ALL))
    return (
        f"unknown intervention {name[:60]!r}{hint}; expected {', '.join(BUILTIN_NAMES)}, cf:NAME or {CF_ALL}"
    )


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` as given, checked: known, each once, ``cf:*`` not beside a ``cf:NAME``."""
    if not names:
        raise MMSpuBenchError(f"--interventions: no name given; expected some of {', '.join(BUILTIN_NAMES)}")
    if len(names) > MAX_NAMES:
        raise MMSpuBenchError(f"--interventions: {len(names)} names; at most {MAX_NAMES}")
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise MMSpuBenchError(f"--interventions: {name!r} is not a name")
        fault = _fault(name)
        if fault:
            raise MMSpuBenchError(f"--interventions: {fault}")
        if name in seen:
            raise MMSpuBenchError(f"--interventions: {name!r} is given twice; give each name once")
        seen.add(name)
    if CF_ALL in seen and any(n.startswith(CF_PREFIX) and n != CF_ALL for n in seen):
        raise MMSpuBenchError(
            f"--interventions: {CF_ALL} already asks every counterfactual; drop the cf:NAME beside it"
        )
    return tuple(names)


def parse_names(text: str) -> tuple[str, ...]:
    """``grayscale,cf:cue-aligned`` -> the names in the order given (checked by :func:`check_names`);
    an empty text is the default (the command line's when the flag is not given): every built-in."""
    if not text.strip():
        return ()
    parts = [part.strip() for part in text.split(",")]
    for position, part in enumerate(parts, start=1):
        if not part and len(parts) > 1:
            raise MMSpuBenchError(f"--interventions {text[:80]!r}: name {position} is empty")
    return check_names([p for p in parts if p])


def uses_counterfactuals(names: Sequence[str]) -> bool:
    """Whether a run asks for the dataset's counterfactual images."""
    return any(n.startswith(CF_PREFIX) for n in names)


def expected_names(names: Sequence[str], shipped: Sequence[str]) -> tuple[str, ...] | str:
    """The entries an item's sample holds, in order: ``names`` with ``cf:*`` expanded to the item's
    counterfactuals ``shipped`` (their names, dataset order); or why the item cannot be asked (a
    ``cf:NAME`` it does not ship)."""
    out: list[str] = []
    for name in names:
        if name == CF_ALL:
            out += [CF_PREFIX + s for s in shipped]
        elif name.startswith(CF_PREFIX):
            if name[len(CF_PREFIX) :] not in shipped:
                have = ", ".join(shipped) if shipped else "none"
                return f"has no counterfactual {name[len(CF_PREFIX) :]!r} (--interventions {name}); it ships: {have}"
            out.append(name)
        else:
            out.append(name)
    return tuple(out)
