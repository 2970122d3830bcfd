"""The split as VLMEvalKit's image multiple-choice TSV (its ``CustomMCQDataset`` reads ``$LMUData/<name>.tsv``).

Columns: ``index`` (the row number), ``image`` (the stored image bytes, base64), ``question``,
``hint`` (empty), ``A``-``D`` (the option texts), ``answer`` (the letter), ``category`` (the item's
spurious types, canonical names joined by ``;``), and ``id`` (our item id, for ``ingest``). The
file is written whole to a temporary name and then renamed, so a failure leaves nothing behind.
"""

from __future__ import annotations

import base64
import csv
import io
from pathlib import Path

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import write_bytes_atomic
from mmspubench.integrations.items import Split, SplitItem

COLUMNS = ("index", "image", "question", "hint", *ANSWER_LETTERS, "answer", "category", "id")
"""The TSV's columns, in order."""
TYPE_SEPARATOR = ";"
"""Between the two type names of an item with two spurious types."""


def row(index: int, split_item: SplitItem) -> list[str]:
    """One TSV row."""
    item = split_item.item
    image = base64.b64encode(split_item.image_bytes).decode("ascii")
    category = TYPE_SEPARATOR.join(item.spurious_types)
    return [str(index), image, item.question, "", *item.options, item.answer, category, item.id]


def tsv_text(split: Split) -> str:
    """The whole TSV."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    for index, split_item in enumerate(split.items):
        writer.writerow(row(index, split_item))
    return buffer.getvalue()


def check_target(out: Path) -> None:
    """``out`` can take the TSV: a ``.tsv`` path, not a folder, in a folder that exists."""
    if out.suffix != ".tsv":
        raise MMSpuBenchError(f"--out {out}: VLMEvalKit reads <name>.tsv; give a path ending in .tsv")
    if out.is_dir():
        raise MMSpuBenchError(f"--out {out}: is a folder; give a file path ending in .tsv")
    if not out.parent.is_dir():
        raise MMSpuBenchError(f"--out {out}: folder {out.parent} does not exist")


def write_tsv(split: Split, out: Path) -> Path:
    """Write ``out`` (checked by :func:`check_target`) whole, then rename it into place."""
    check_target(out)
    write_bytes_atomic(out, [tsv_text(split).encode("utf-8")])
    return out
