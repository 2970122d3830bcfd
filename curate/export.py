"""``curate export``: reviews applied, thresholds kept, a raw release that ``build`` accepts.

Per item, each annotator's latest review counts (a later review supersedes an earlier one). An
item is kept when at least ``min_annotators`` reviewed it, the mean of their ratings is at least
``min_mean_rating``, and more than half of them accepted it. Its fields are the draft's with the
latest accepted edit of each field applied; the result is validated as ``build`` would and an
item whose merged edits do not validate is left out with the reason in the report. The release
is written beside ``--out``, validated whole, then swapped into place. A database recorded for
another draft (or for this draft changed since it was reviewed) is refused before anything else.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mmspubench.curate.agreement import krippendorff_alpha
from mmspubench.curate.names import name_key
from mmspubench.curate.paths import check_out
from mmspubench.curate.review_db import Review, all_reviews, bind_draft, latest_per_annotator, open_db
from mmspubench.curate.review_handlers import Draft, apply_edits, image_file, load_draft, raw_fields
from mmspubench.dataset_builder.builder import validate_release
from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.raw import ANNOTATION_FILE, IMAGES_DIR
from mmspubench.dataset_builder.schema import TYPE_ABBREV, Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.options import option

REPORT_FILE = "agreement.json"


@dataclass(frozen=True, slots=True)
class ExportConfig:
    """Thresholds of the export."""

    min_annotators: int = option(1, "annotators needed per item", arg_type=int)
    """Annotators needed per item."""
    min_mean_rating: float = option(3.0, "mean rating needed", arg_type=float)
    """Mean rating an item needs."""


def merged_edits(reviews: list[Review]) -> dict[str, Any]:
    """For each field, the value of the latest accepting review that edited it."""
    edits: dict[str, Any] = {}
    for review in sorted(reviews, key=lambda r: r.seq):
        if review.decision == "accept":
            edits.update(review.edits)
    return edits


def decide(latest: dict[str, Review], config: ExportConfig) -> str | None:
    """``None`` when the item meets the thresholds, else why not."""
    n = len(latest)
    if n < config.min_annotators:
        return f"{n} annotator(s) < {config.min_annotators}"
    mean = float(np.mean([r.rating for r in latest.values()]))
    if mean < config.min_mean_rating:
        return f"mean rating {mean:.2f} < {config.min_mean_rating}"
    accepts = sum(r.decision == "accept" for r in latest.values())
    if accepts * 2 <= n:
        return f"accepted by {accepts} of {n}"
    return None


def run_export(
    draft_folder: Path, db: Path, config: ExportConfig, out: Path, *, overwrite: bool = False
) -> str:
    """Write the reviewed release to ``out``; returns the agreement report text."""
    if config.min_annotators < 1:
        raise MMSpuBenchError(f"--min-annotators {config.min_annotators}: expected 1 or more")
    if not 1.0 <= config.min_mean_rating <= 5.0:
        raise MMSpuBenchError(f"--min-mean-rating {config.min_mean_rating}: expected a number from 1 to 5")
    out = check_out(out, overwrite, {"--draft": Path(draft_folder), "--db": Path(db)})
    draft = load_draft(Path(draft_folder))
    bind_draft(open_db(Path(db), create=False), draft.identity, record=False)
    reviews = all_reviews(Path(db))
    known = {r.id for r in draft.records}
    stray = next((r for r in reviews if r.item_id not in known), None)
    if stray is not None:
        raise MMSpuBenchError(
            f"{db}: review {stray.seq} is of item {stray.item_id!r}, which the draft {draft_folder} does not hold"
        )
    kept, left_out = _keep(draft, reviews, config)
    if not kept:
        raise MMSpuBenchError(
            f"no item meets --min-annotators {config.min_annotators} --min-mean-rating {config.min_mean_rating} "
            f"({len(reviews)} reviews of {len(draft.records)} items)"
        )
    report = agreement_report(draft, reviews, kept, left_out, config)
    replace_folder(out, lambda folder: _write(folder, kept, report))
    return format_report(report)


def _keep(draft: Draft, reviews: list[Review], config: ExportConfig) -> tuple[list[Item], dict[str, str]]:
    latest = latest_per_annotator(reviews)
    kept, left_out = [], {}
    for record in draft.records:
        why = decide(latest.get(record.id, {}), config)
        if why is None:
            edits = merged_edits([r for r in reviews if r.item_id == record.id])
            try:
                record = apply_edits(draft, record.id, edits, f"merged edits of item {record.id!r}")
            except MMSpuBenchError as err:
                why = f"merged edits do not validate: {err}"
        if why is None:
            kept.append(record)
        else:
            left_out[record.id] = why
    return kept, left_out


def agreement_report(
    draft: Draft, reviews: list[Review], kept: list[Item], left_out: dict[str, str], config: ExportConfig
) -> dict[str, Any]:
    """Ratings (mean, spread), Krippendorff's alpha, decisions and items per type."""
    latest = latest_per_annotator(reviews)
    units = [[r.rating for r in by.values()] for by in latest.values()]
    ratings = [x for unit in units for x in unit]
    types = Counter(TYPE_ABBREV[t] for r in kept for t in r.spurious_types)
    return {
        "thresholds": {"min_annotators": config.min_annotators, "min_mean_rating": config.min_mean_rating},
        "items": {
            "draft": len(draft.records),
            "reviewed": len(latest),
            "kept": len(kept),
            "left_out": left_out,
        },
        "annotators": sorted({name_key(r.annotator) for r in reviews}),
        "reviews": len(reviews),
        "ratings": {
            "n": len(ratings),
            "mean": float(np.mean(ratings)) if ratings else None,
            "std": float(np.std(ratings)) if ratings else None,
            "histogram": {str(k): ratings.count(k) for k in range(1, 6)},
        },
        "krippendorff_alpha": {m: krippendorff_alpha(units, m) for m in ("interval", "ordinal")},
        "items_per_type": dict(sorted(types.items())),
    }


def format_report(report: dict[str, Any]) -> str:
    """The report as a few readable lines."""
    ratings, alpha, items = report["ratings"], report["krippendorff_alpha"], report["items"]

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    lines = [
        f"kept {items['kept']} of {items['draft']} draft items ({items['reviewed']} reviewed, "
        f"{report['reviews']} reviews by {len(report['annotators'])} annotators)",
        f"ratings: mean {num(ratings['mean'])}, std {num(ratings['std'])}, histogram {ratings['histogram']}",
        f"Krippendorff's alpha: interval {num(alpha['interval'])}, ordinal {num(alpha['ordinal'])}",
        "items per type: " + ", ".join(f"{t} {n}" for t, n in report["items_per_type"].items()),
    ]
    lines += [f"left out {item}: {why}" for item, why in items["left_out"].items()]
    return "\n".join(lines)


def _write(folder: Path, kept: list[Item], report: dict[str, Any]) -> None:
    (folder / IMAGES_DIR).mkdir(parents=True)
    records = []
    for record in kept:
        image = image_file(record)
        name = (IMAGES_DIR / image.name).as_posix()
        shutil.copyfile(image, folder / name)
        records.append({"id": record.id, "image": name, **raw_fields(record)})
    (folder / ANNOTATION_FILE).write_text(
        json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (folder / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    validate_release(folder)
