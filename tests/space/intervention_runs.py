"""Run folders of the interventions view for the Space's tests, written with eval's own writers.

Twenty items of a 20-item split (``test_submit._sample``: gold A, items 2, 4, 6, 8, 12, 14, 16, 18
right, 40%), generate mode. Under ``grayscale`` the Col. items (4 and 13) answer A and item 2 (BG)
answers C; under ``blur`` every item answers as published; on ``cf:cue-aligned`` every item is right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.schema import TYPE_NAMES
from mmspubench.dataset_builder.split_ids import split_identity
from mmspubench.eval.config import RunConfig
from mmspubench.eval.interventions import INTERVENTIONS
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import Answer, InterventionAnswer, SampleResult

from tests.eval.submit.test_submit import DATASET, REVISION, _sample
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

NAMES = ("grayscale", "blur", "cf:cue-aligned")
WHOLE = [f"{i:06d}" for i in range(20)]
COL_ITEMS = (4, 13)
"""The items with the Col. type (``_sample``'s types: ``TYPE_NAMES[i % 9]``, a second on every fourth)."""


def letter(i: int, name: str, published: str | None) -> str:
    """The answer of item ``i`` under intervention ``name`` (see the module docstring)."""
    if name == "cf:cue-aligned" or (name == "grayscale" and i in COL_ITEMS):
        return "A"
    if name == "grayscale" and i == 2:
        return "C"
    return published or "?"


def entry(i: int, name: str, sample: SampleResult, digest: str) -> InterventionAnswer:
    """Item ``i``'s answer under ``name`` (the raw output is the letter, parsed as such)."""
    said = letter(i, name, sample.prediction)
    prediction = said if said in "ABCD" else None
    targets = INTERVENTIONS[name].targets if name in INTERVENTIONS else TYPE_NAMES
    cgls = tuple(c.cgl for c in sample.conditions)
    return InterventionAnswer(
        name,
        tuple(targets),
        digest,
        Answer(prediction, prediction == sample.answer, said, None),
        cgls,
        sample.cgla_min,
        sample.cgla_acc,
    )


def samples(
    names: Sequence[str] = NAMES, digests: dict[tuple[int, str], str] | None = None
) -> list[SampleResult]:
    """The twenty samples, each with its answer under every one of ``names``."""
    out = []
    for i in range(20):
        base = _sample(i)
        shown = tuple(entry(i, n, base, (digests or {}).get((i, n), f"{i:02x}" * 32)) for n in names)
        out.append(replace(base, interventions=shown))
    return out


def write(
    root: Path,
    name: str,
    names: Sequence[str] = NAMES,
    records: Sequence[SampleResult] | None = None,
    **config_kw: Any,
) -> Path:
    """A consistent interventions run folder ``root/name`` (metrics accuracy, cgla, interventions)."""
    records = list(records if records is not None else samples(names))
    config = RunConfig(
        model="org/iv",
        dataset=DATASET,
        prompts=prompt_spec(),
        metrics=("accuracy", "cgla", "interventions"),
        interventions=tuple(names),
        **config_kw,
    )
    info = {"id": DATASET, "revision": REVISION, **split_identity(WHOLE)}
    created = "2026-01-05T00:00:00+00:00"
    return write_run_folder(root / name, config, records, info, model_identity("org/iv"), created=created)
