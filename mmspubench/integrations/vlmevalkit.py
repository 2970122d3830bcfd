"""The split as VLMEvalKit's image multiple-choice TSV (its ``CustomMCQDataset`` reads ``$LMUData/<name>.tsv``).

VLMEvalKit reads the file with pandas' defaults (``pd.read_csv(path, sep='\\t')``): a cell that
reads as a number, a boolean or one of pandas' missing-value words (``NA``, ``None``, ``nan``,
``null``, ``N/A``, ``#N/A``, ``<NA>``, the empty text...) does not come back as the text written,
and its prompt builder drops an option that reads as missing. So the columns are chosen to
survive that reader, and every file is read back with exactly that call before it is put in place:

- ``index``: the row number (0, 1, ...), the integer key VLMEvalKit keeps (it names the dumped
  image ``<index>.jpg`` and matches predictions by it);
- ``image``: the stored image bytes, base64; ``question``; ``A``-``D``: the option texts;
  ``answer``: the letter; ``category``: the item's spurious types, canonical names joined by ``;``;
- ``item_id``: our item id after the prefix ``item:`` (``item:000000``), so an id made of digits
  (``000000``) is not read as the number 0.

No ``hint`` column (VLMEvalKit reads an absent hint as no hint). A text that the reader would turn
into something else (an option ``None``, a question ``NA``) is refused with one line naming the
item and the field; nothing is written then. The file is written whole to a temporary name and
renamed, so a failure leaves nothing behind.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval.results import write_bytes_atomic
from mmspubench.integrations.items import Split, SplitItem

COLUMNS = ("index", "image", "question", *ANSWER_LETTERS, "answer", "category", "item_id")
"""The TSV's columns, in order."""
TYPE_SEPARATOR = ";"
"""Between the two type names of an item with two spurious types."""
ID_PREFIX = "item:"
"""Before each item id in ``item_id`` (strip it to get the id back)."""
MIN_IMAGE_CHARS = 65
"""VLMEvalKit reads an ``image`` cell of at most 64 characters as the index of another row's image."""


def row(index: int, split_item: SplitItem) -> list[str]:
    """One TSV row."""
    item = split_item.item
    image = base64.b64encode(split_item.image_bytes).decode("ascii")
    category = TYPE_SEPARATOR.join(item.spurious_types)
    return [str(index), image, item.question, *item.options, item.answer, category, ID_PREFIX + item.id]


def tsv_text(split: Split) -> str:
    """The whole TSV (not yet checked against VLMEvalKit's reader: :func:`checked_tsv_text`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    for index, split_item in enumerate(split.items):
        writer.writerow(row(index, split_item))
    return buffer.getvalue()


def read_back(text: str) -> Any:
    """The TSV as VLMEvalKit reads it: ``pd.read_csv(f, sep='\\t')``, pandas' defaults, nothing else."""
    import pandas as pd

    return pd.read_csv(io.StringIO(text), sep="\t")


def _differs(expected: str, got: Any, column: str) -> bool:
    if column == "index":
        return isinstance(got, bool) or not hasattr(got, "__index__") or str(int(got)) != expected
    return not isinstance(got, str) or got != expected


def check_read_back(split: Split, text: str, source: str) -> None:
    """Every cell of ``text`` read by VLMEvalKit's reader equals what was written, or one error line."""
    table = read_back(text)
    if list(table.columns) != list(COLUMNS) or len(table) != len(split.items):
        raise MMSpuBenchError(f"{source}: the TSV does not read back with {len(split.items)} rows")
    for index, (split_item, got) in enumerate(zip(split.items, table.itertuples(index=False), strict=True)):
        written: Sequence[str] = row(index, split_item)
        for column, expected, value in zip(COLUMNS, written, got, strict=True):
            if _differs(expected, value, column):
                raise record_error(
                    source,
                    split_item.item.id,
                    column,
                    f"{expected[:40]!r} reads back under VLMEvalKit's reader (pandas read_csv defaults) as "
                    f"{value!r}; edit the text or evaluate this item with mmspubench eval",
                )
        if len(written[1]) < MIN_IMAGE_CHARS:
            raise record_error(source, split_item.item.id, "image", "too small for VLMEvalKit's image column")


def check_target(out: Path) -> None:
    """``out`` can take the TSV: a ``.tsv`` path, not a folder, in a folder that exists."""
    if out.suffix != ".tsv":
        raise MMSpuBenchError(f"--out {out}: VLMEvalKit reads <name>.tsv; give a path ending in .tsv")
    if out.is_dir():
        raise MMSpuBenchError(f"--out {out}: is a folder; give a file path ending in .tsv")
    if not out.parent.is_dir():
        raise MMSpuBenchError(f"--out {out}: folder {out.parent} does not exist")


def write_tsv(split: Split, out: Path, source: str = "the dataset") -> Path:
    """Write ``out`` (checked by :func:`check_target`) whole once it reads back exactly, then rename it into place."""
    check_target(out)
    text = tsv_text(split)
    check_read_back(split, text, source)
    write_bytes_atomic(out, [text.encode("utf-8")])
    return out
