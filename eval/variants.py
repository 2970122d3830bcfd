"""The prompt variant of a run as every view shows it, and the resume check on it.

A run's variant is results.json's ``config.prompt_variant`` (and ``config.cgla_prompt_variant``
for g(t)); files written before variants existed lack both and read as ``standard``. An
``attribute-hint`` run is a ceiling, never a fair run: :func:`variant_label` says so wherever a
run is named (report, leaderboard, submit refuses it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.prompts import STANDARD, VARIANTS

CEILING_MARK = "ceiling"
"""Word added to the label of a variant that gives the model information a fair run lacks."""


def recorded(config: Any, key: str = "prompt_variant") -> str:
    """The variant a results.json ``config`` (or run manifest config) records; ``standard`` if none."""
    value = config.get(key) if isinstance(config, Mapping) else None
    return str(value) if value else STANDARD


def is_ceiling(name: str) -> bool:
    """Whether ``name`` is a ceiling variant (an unknown name is not)."""
    found = VARIANTS.get(name)
    return bool(found and found.ceiling)


def variant_label(config: Any) -> str:
    """``standard``, ``core-focus``, ``attribute-hint (ceiling)``; ``, CGLA: NAME`` when g(t) changed."""
    name = recorded(config)
    label = f"{name} ({CEILING_MARK})" if is_ceiling(name) else name
    cgla = recorded(config, "cgla_prompt_variant")
    return label if cgla == STANDARD else f"{label}, CGLA: {cgla}"


def check_resume(out_dir: Path, manifest_config: Any, prompt_variant: str, cgla_variant: str) -> None:
    """Refuse to resume a run folder whose recorded variants differ from the ones asked for."""
    for key, flag, asked in (
        ("prompt_variant", "--prompt-variant", prompt_variant),
        ("cgla_prompt_variant", "--cgla-prompt-variant", cgla_variant),
    ):
        held = recorded(manifest_config, key)
        if held != asked:
            raise MMSpuBenchError(
                f"{out_dir}: holds a run with {flag} {held}, not {asked}; refusing to resume into "
                "it; use another --out folder"
            )
