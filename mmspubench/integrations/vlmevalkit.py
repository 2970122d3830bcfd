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

No ``hint`` column (VLMEvalKit reads an absent hint as no hint).

With ``circular`` (``mmspubench export --circular``) each item is also written in its rotations
1-3, VLMEvalKit's CircularEval convention: the copy of rotation ``k`` of the item at row index
``i`` has index ``i + k * 1000000`` (VLMEvalKit groups the rows of an item by ``index % 1e6`` and
takes the rows with ``index < 1e6`` as the originals), its options in ``mmspubench eval``'s
rotation ``k`` (``eval.views.confounds.metrics.rotated_options``: the option of published position ``j``
at ``(j + k) mod 4``) and its ``answer`` the gold letter as shown. VLMEvalKit applies CircularEval
only to a dataset whose name contains ``circular`` (so the file must be named like
``MM_SpuBench_Circular.tsv``). A text that the reader would turn
into something else (an option ``None``, a question ``NA``) is refused with one line naming the
item and the field; nothing is written then. The file is written whole to a temporary name and
renamed, so a failure leaves nothing behind.

With ``interventions`` (``mmspubench export --interventions grayscale,cf:cue-aligned``) one more
TSV per intervention is written beside ``out``, named ``<out's stem>_<name>.tsv`` (``cf:NAME`` as
``cf-NAME``): the same rows, columns and ``index`` values, the ``image`` cell the PNG (base64) of
the image ``mmspubench eval --interventions NAME`` shows (``eval.views.interventions.images.shown_under``:
the built-in transform of ``eval.interventions``, or the item's own counterfactual). ``cf:*`` is
refused (its names differ from item to item; give them as ``cf:NAME``), as is a ``cf:NAME`` some
item does not ship. Every file is built and read back before the first is put in place.

With a run (``mmspubench export --run DIR``) the file is VLMEvalKit's prediction file of the run's
generated answers (:data:`PREDICTION_COLUMNS`): the dataset's columns without ``image`` and with the
dataset TSV's ``index``, then ``prediction`` (the text after the reasoning, samples.jsonl's
``answer_text``), ``thinking`` (the reasoning: the column of VLMEvalKit's ``SPLIT_THINK``),
``raw_output`` and ``read_by``. A model's text that pandas reads as missing is written with one
leading space (:func:`guarded`); the file is read back with VLMEvalKit's reader like the others.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import io
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError, record_error
from mmspubench.eval.intervention_names import CF_ALL, CF_PREFIX, check_names
from mmspubench.eval.results import write_bytes_atomic
from mmspubench.eval.views.confounds import metrics as metrics_confounds
from mmspubench.integrations.items import Split, SplitItem

COLUMNS = ("index", "image", "question", *ANSWER_LETTERS, "answer", "category", "item_id")
"""The TSV's columns, in order."""
TYPE_SEPARATOR = ";"
"""Between the two type names of an item with two spurious types."""
ID_PREFIX = "item:"
"""Before each item id in ``item_id`` (strip it to get the id back)."""
CIRCULAR_OFFSET = 1_000_000
"""VLMEvalKit's index offset of a rotated copy: rotation ``k`` of row ``i`` is row ``i + k * 1e6``."""
CIRCULAR_WORD = "circular"
"""VLMEvalKit runs CircularEval on a dataset whose name holds this word (any case)."""
MIN_IMAGE_CHARS = 65
"""VLMEvalKit reads an ``image`` cell of at most 64 characters as the index of another row's image."""


def row(index: int, split_item: SplitItem, rotation: int = 0) -> list[str]:
    """One TSV row: the item with its options in ``rotation`` (0: the published order)."""
    item = split_item.item
    image = base64.b64encode(split_item.image_bytes).decode("ascii")
    category = TYPE_SEPARATOR.join(item.spurious_types)
    options = metrics_confounds.rotated_options(item.options, rotation)
    answer = metrics_confounds.rotated_answer(item.answer, rotation)
    return [str(index), image, item.question, *options, answer, category, ID_PREFIX + item.id]


def rows(split: Split, circular: bool = False) -> list[tuple[SplitItem, list[str]]]:
    """Every row in file order: the items, then with ``circular`` their rotations 1-3 (index + k * 1e6)."""
    if circular and len(split.items) >= CIRCULAR_OFFSET:
        raise MMSpuBenchError(
            f"--circular: {len(split.items)} items; VLMEvalKit's convention takes under 1e6"
        )
    rotations = metrics_confounds.ROTATIONS if circular else (0,)
    return [
        (split_item, row(index + k * CIRCULAR_OFFSET, split_item, k))
        for k in rotations
        for index, split_item in enumerate(split.items)
    ]


def tsv_text(split: Split, circular: bool = False) -> str:
    """The whole TSV (not yet checked against VLMEvalKit's reader: :func:`check_read_back`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    for _, cells in rows(split, circular):
        writer.writerow(cells)
    return buffer.getvalue()


def read_back(text: str) -> Any:
    """The TSV as VLMEvalKit reads it: ``pd.read_csv(f, sep='\\t')``, pandas' defaults, nothing else."""
    import pandas as pd

    return pd.read_csv(io.StringIO(text), sep="\t")


def _differs(expected: str, got: Any, column: str) -> bool:
    if column == "index":
        return isinstance(got, bool) or not hasattr(got, "__index__") or str(int(got)) != expected
    return not isinstance(got, str) or got != expected


def check_read_back(split: Split, text: str, source: str, circular: bool = False) -> None:
    """Every cell of ``text`` read by VLMEvalKit's reader equals what was written, or one error line."""
    expected = rows(split, circular)
    remedy = "; edit the text or evaluate this item with mmspubench eval"
    _check_cells(text, COLUMNS, expected, source, "the TSV", source, remedy)
    for split_item, written in expected:
        if len(written[1]) < MIN_IMAGE_CHARS:
            raise record_error(source, split_item.item.id, "image", "too small for VLMEvalKit's image column")


def check_target(out: Path, circular: bool = False) -> None:
    """``out`` can take the TSV: a ``.tsv`` path, not a folder, in a folder that exists; with
    ``circular`` a name VLMEvalKit runs CircularEval on."""
    if out.suffix != ".tsv":
        raise MMSpuBenchError(f"--out {out}: VLMEvalKit reads <name>.tsv; give a path ending in .tsv")
    if out.is_dir():
        raise MMSpuBenchError(f"--out {out}: is a folder; give a file path ending in .tsv")
    if not out.parent.is_dir():
        raise MMSpuBenchError(f"--out {out}: folder {out.parent} does not exist")
    if circular and CIRCULAR_WORD not in out.stem.lower():
        raise MMSpuBenchError(
            f"--out {out}: VLMEvalKit runs CircularEval only on a dataset whose name contains "
            f"'{CIRCULAR_WORD}'; name it e.g. MM_SpuBench_Circular.tsv"
        )


def intervention_names(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` checked (known, each once); ``cf:*`` refused: one file per name needs the names."""
    checked = check_names(names)
    if CF_ALL in checked:
        raise MMSpuBenchError(
            f"--interventions {CF_ALL}: the export writes one TSV per intervention and each item "
            "ships its own counterfactuals; give them by name (cf:NAME, each shipped by every item)"
        )
    return checked


def intervention_path(out: Path, name: str) -> Path:
    """The TSV of intervention ``name`` beside ``out``: ``<stem>_<name>.tsv``, ``cf:NAME`` as ``cf-NAME``."""
    part = "cf-" + name[len(CF_PREFIX) :] if name.startswith(CF_PREFIX) else name
    return out.with_name(f"{out.stem}_{part}{out.suffix}")


def intervened(split: Split, name: str, source: str) -> Split:
    """``split`` with each item's image bytes the PNG of its image under intervention ``name``."""
    from mmspubench.eval.views.interventions.images import shown_under

    items = []
    for split_item in split.items:
        (shown,) = shown_under(split_item.item, (name,), source)
        buffer = io.BytesIO()
        shown.image.save(buffer, format="PNG")  # lossless: the pixels eval shows, digest for digest
        items.append(dataclasses.replace(split_item, image_bytes=buffer.getvalue()))
    return dataclasses.replace(split, items=tuple(items))


def write_tsv(
    split: Split,
    out: Path,
    source: str = "the dataset",
    circular: bool = False,
    interventions: Sequence[str] = (),
) -> list[Path]:
    """Write ``out`` (checked by :func:`check_target`) and one TSV per intervention beside it; each is
    staged under a temporary name once it reads back exactly (one file's text in memory at a time) and
    all are renamed into place at the end. A failure leaves no file and no temporary behind."""
    check_target(out, circular)
    names = intervention_names(interventions) if interventions else ()
    paths = [out, *(intervention_path(out, name) for name in names)]
    for path, shown in zip(paths[1:], names, strict=True):
        if path.exists() and not path.is_file():
            raise MMSpuBenchError(f"--out {out}: {path} (the {shown} TSV) exists and is not a file")
    staged: list[tuple[Path, Path]] = []
    try:
        for path, name in zip(paths, (None, *names), strict=True):
            version = split if name is None else intervened(split, name, source)
            text = tsv_text(version, circular)
            check_read_back(version, text, source, circular)
            temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.staged")
            staged.append((temporary, path))
            write_bytes_atomic(temporary, [text.encode("utf-8")])
        for temporary, path in staged:
            os.replace(temporary, path)
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
    return paths


PREDICTION_COLUMNS = (
    "index",
    "question",
    *ANSWER_LETTERS,
    "answer",
    "category",
    "item_id",
    "prediction",
    "thinking",
    "raw_output",
    "read_by",
)
"""The prediction file's columns: VLMEvalKit's (the dataset's without ``image``, then
``prediction`` and, as its ``SPLIT_THINK`` writes it, ``thinking``), then ours."""
NA_WORDS = frozenset(
    {
        *("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN"),
        *("<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"),
    }
)
"""The texts pandas' ``read_csv`` reads as missing by default (its documented ``na_values``)."""


def guarded(text: str) -> str:
    """A model's text as a cell that reads back as text: one that pandas would read as missing
    (``None``, ``NA``, the empty text...) gets one leading space (VLMEvalKit strips it)."""
    return " " + text if text in NA_WORDS else text


def check_generated(samples: Sequence[Any], where: str) -> None:
    """Every sample has a generated answer (before the dataset is read), or one line naming the first
    that has none."""
    for sample in samples:
        _reading_of_generated(sample, sample.id, where)


def _reading_of_generated(sample: Any, item_id: str, where: str) -> Any:
    from mmspubench.eval.records import reading_of

    reading = reading_of(sample)
    if sample.raw_output is None or reading is None:
        raise record_error(
            where,
            item_id,
            "raw_output",
            "missing: export --run takes a generate-mode run (--answer-mode generate)",
        )
    return reading


def prediction_row(index: int, split_item: SplitItem, sample: Any, where: str) -> list[str]:
    """One row of the prediction file: the item's published order and its answer as read."""
    item = split_item.item
    reading = _reading_of_generated(sample, item.id, where)
    cells = [str(index), item.question, *item.options, item.answer]
    cells += [TYPE_SEPARATOR.join(item.spurious_types), ID_PREFIX + item.id]
    texts = (reading.answer_text, reading.reasoning or "", sample.raw_output)
    return [*cells, *(guarded(t) for t in texts), reading.read_by]


def prediction_rows(split: Split, samples: Sequence[Any], where: str) -> list[tuple[SplitItem, list[str]]]:
    """The rows of the run's items, in split order with their split index; every sample an item of
    the split with the same answer and types."""
    by_id = {s.id: s for s in samples}
    out = []
    for index, split_item in enumerate(split.items):
        sample = by_id.pop(split_item.item.id, None)
        if sample is None:
            continue
        item = split_item.item
        if sample.answer != item.answer or tuple(sample.types) != tuple(item.spurious_types):
            raise record_error(
                where, item.id, "answer", "the run's item is not the split's (another dataset?)"
            )
        out.append((split_item, prediction_row(index, split_item, sample, where)))
    if by_id:
        raise record_error(where, next(iter(by_id)), "id", "not an item of the split exported")
    return out


def predictions_text(split: Split, samples: Sequence[Any], where: str, source: str) -> tuple[str, int]:
    """The prediction TSV and its rows, every cell read back with VLMEvalKit's reader as written,
    or one line."""
    built = prediction_rows(split, samples, where)
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(PREDICTION_COLUMNS)
    writer.writerows(cells for _, cells in built)
    text = buffer.getvalue()
    _check_cells(text, PREDICTION_COLUMNS, built, source, "the prediction TSV", where, "")
    return text, len(built)


def _check_cells(
    text: str,
    columns: Sequence[str],
    expected: Sequence[tuple[Any, Sequence[str]]],
    source: str,
    what: str,
    where: str,
    remedy: str,
) -> None:
    """Every cell of the TSV ``text`` read by VLMEvalKit's reader equals what was written (the
    ``(split item, cells)`` rows of ``expected``), or one line naming ``where``, the item and the column."""
    table = read_back(text)
    if list(table.columns) != list(columns) or len(table) != len(expected):
        raise MMSpuBenchError(f"{source}: {what} does not read back with {len(expected)} rows")
    for (split_item, written), got in zip(expected, table.itertuples(index=False), strict=True):
        for column, cell, value in zip(columns, written, got, strict=True):
            if _differs(cell, value, column):
                raise record_error(
                    where,
                    split_item.item.id,
                    column,
                    f"{cell[:40]!r} reads back under VLMEvalKit's reader (pandas read_csv defaults) as "
                    f"{value!r}{remedy}",
                )


def write_predictions(split: Split, samples: Sequence[Any], out: Path, where: str, source: str) -> int:
    """Write VLMEvalKit's prediction file of a run's answers to ``out`` (a ``.tsv``), whole or not
    at all; returns the number of rows."""
    check_target(out)
    text, n = predictions_text(split, samples, where, source)
    write_bytes_atomic(out, [text.encode("utf-8")])
    return n
