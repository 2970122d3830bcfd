"""Two releases of the fixture items and runs made on each, written with eval's own writers, for
the tests of what the Space shows beside which run.

Release ``a`` is ``fixtures.ITEMS`` (item 000000 a dog, answer B); release ``b`` has the same ids
but item 000000 is a kite, answer C: a run of ``b`` read under ``a``'s item 000000 would show a
kite's CGLA and answer C.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
from mmspubench.dataset_builder.load import load_pinned
from mmspubench.dataset_builder.schema import FEATURES, TYPE_NAMES, Item
from mmspubench.dataset_builder.split_ids import split_identity
from mmspubench.eval import interventions, metrics
from mmspubench.eval.config import RunConfig
from mmspubench.eval.data import row_to_item
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import Answer, Condition, InterventionAnswer, SampleResult
from PIL import Image

from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

from .fixtures import ITEMS

KITE = {
    "class_name": "kite",
    "answer": 2,
    "options": ["a cup", "a dog", "a kite", "a bell"],
    "core_attributes": ["a pointed top"],
    "spurious_attributes": ["salt-and-pepper noise"],
    "spurious_types": [1],
    "colour": (90, 90, 90),
}
"""Item 000000 of release ``b``."""
LETTERS = "ABCD"


def write_release(folder: Path, *, kite: bool = False) -> Path:
    """A built dataset folder of the three fixture items (``kite``: release ``b``)."""
    rows = [dict(item) for item in ITEMS]
    if kite:
        rows[0].update(KITE)
    return _write_rows(folder, rows)


def write_release_of(folder: Path, samples: Sequence[SampleResult]) -> Path:
    """A built dataset folder whose items are the ones ``samples`` were made on: each record's id,
    answer, class name, types and attributes (a run written by hand, shown beside its own items)."""
    rows = [
        {
            "id": s.id,
            "question": f"What is item {s.id}?",
            "options": ["opt a", "opt b", "opt c", "opt d"],
            "answer": LETTERS.index(s.answer),
            "class_name": s.class_name,
            "core_attributes": [c.attribute for c in s.conditions if c.kind == "core"] or ["core 0"],
            "spurious_attributes": [c.attribute for c in s.conditions if c.kind == "spurious"] or ["spu 0"],
            "spurious_types": [TYPE_NAMES.index(t) for t in s.types],
            "source": 0,
            "colour": (10 * k % 256, 40, 90),
        }
        for k, s in enumerate(samples)
    ]
    return _write_rows(folder, rows)


def _write_rows(folder: Path, rows: Sequence[dict[str, Any]]) -> Path:
    columns: dict[str, list[Any]] = {name: [] for name in FEATURES}
    for row in rows:
        for name in FEATURES:
            value = Image.new("RGB", (32, 24), row["colour"]) if name == "image" else row[name]
            columns[name].append(value)
    (folder / "data").mkdir(parents=True)
    shard = folder / "data" / "test-00000-of-00001.parquet"
    datasets.Dataset.from_dict(columns, features=FEATURES).to_parquet(str(shard))
    return folder


def made_up_conditions(item: Item) -> tuple[tuple[Condition, ...], float]:
    """The item's CGLA conditions with made-up CGLs (every core above every spurious one), and
    their CGLA_min."""
    core = tuple(-1.0 - 0.1 * k for k, _ in enumerate(item.core_attributes))
    spurious = tuple(-2.0 - 0.1 * k for k, _ in enumerate(item.spurious_attributes))
    conditions = tuple(
        Condition(a, "core", f"<p>{a}", " " + item.class_name, c)
        for a, c in zip(item.core_attributes, core, strict=True)
    ) + tuple(
        Condition(a, "spurious", f"<p>{a}", " " + item.class_name, s)
        for a, s in zip(item.spurious_attributes, spurious, strict=True)
    )
    return conditions, metrics.cgla_min(core, spurious, "best")


def _sample(item: Item, right: bool) -> SampleResult:
    """The item answered (right or not), its CGLA conditions, and its answer under grayscale."""
    letter = item.answer if right else LETTERS[(LETTERS.index(item.answer) + 1) % 4]
    conditions, value = made_up_conditions(item)
    reply = Answer(letter, letter == item.answer, letter, None)
    digest = interventions.apply("grayscale", item.pil_image)[1]
    targets = tuple(interventions.INTERVENTIONS["grayscale"].targets)
    gray = InterventionAnswer(
        "grayscale", targets, digest, reply, tuple(c.cgl for c in conditions), value, metrics.cgla_acc(value)
    )
    return SampleResult(
        id=item.id,
        types=item.spurious_types,
        answer=item.answer,
        prediction=letter,
        correct=letter == item.answer,
        raw_output=letter,
        option_scores=None,
        class_name=item.class_name,
        conditions=conditions,
        cgla_min=value,
        cgla_acc=metrics.cgla_acc(value),
        interventions=(gray,),
    )


def write_run_on(
    root: Path, name: str, release: Path, model: str = "org/m", created: str = "2026-01-01T00:00:00+00:00"
) -> Path:
    """A finished run folder ``root/name`` of ``model`` on ``release`` (every item right), made as
    eval makes it: the dataset's identity as eval records it, every sample stamped."""
    dataset, identity = load_pinned(release)
    items = [row_to_item(row, str(release)) for row in dataset]
    samples = [_sample(item, right=True) for item in items]
    config = RunConfig(
        model=model,
        dataset=str(release),
        prompts=prompt_spec(),
        metrics=("accuracy", "cgla", "interventions"),
        interventions=("grayscale",),
    )
    info = {**identity, **split_identity([s.id for s in samples])}
    return write_run_folder(root / name, config, samples, info, model_identity(model), created=created)
