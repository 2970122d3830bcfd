"""Benchmark rows -> ``Item`` records: ClassLabel integers become names, fields are checked.

Items are produced lazily, one decoded image at a time, so a full run never holds every image.
Before that, :func:`check_images` decodes every image of the run once, exactly as a run will (a
decompression bomb, an unreadable or a truncated file met in a later chunk would otherwise stop a
run half-written), one at a time, keeping none.
"""

from __future__ import annotations

import re
import struct
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import (
    COUNTERFACTUALS_FIELD,
    REQUIRED_FIELDS,
    Item,
)
from mmspubench.errors import MMSpuBenchError, first_line, record_error

if TYPE_CHECKING:
    import datasets


def check_columns(dataset: datasets.Dataset, where: str) -> None:
    """Raise when the dataset lacks a field of the schema."""
    missing = [name for name in REQUIRED_FIELDS if name not in dataset.column_names]
    if missing:
        raise MMSpuBenchError(
            f"{where}: missing required field(s) {', '.join(missing)}; "
            f"expected the MM-SpuBench schema fields {', '.join(REQUIRED_FIELDS)}"
        )


def check_limit(limit: int | None) -> None:
    """``--limit`` must be a positive number of items."""
    if limit is not None and limit <= 0:
        raise MMSpuBenchError(f"--limit must be a positive number of items, got {limit}")


def item_ids(dataset: datasets.Dataset, limit: int | None) -> list[str]:
    """Ids of the items a run evaluates: the first ``limit`` rows in dataset order (all if ``None``)."""
    check_limit(limit)
    n = len(dataset) if limit is None else min(limit, len(dataset))
    ids = [str(i) for i in dataset.select_columns(["id"]).select(range(n))["id"]]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise MMSpuBenchError(f"dataset: field 'id': duplicate id(s) {dupes[:5]}; ids must be unique")
    return ids


def row_to_item(row: Mapping[str, Any], where: str) -> Item:
    """One dataset row -> ``Item`` (:meth:`Item.from_row`); raises ``MMSpuBenchError`` if malformed."""
    return Item.from_row(row, where)


def iter_items(dataset: datasets.Dataset, ids: Sequence[str], where: str) -> Iterator[Item]:
    """The items with the given ids, in the order of ``ids``, decoded one at a time."""
    check_columns(dataset, where)
    position = {item_id: i for i, item_id in enumerate(dataset.select_columns(["id"])["id"])}
    for item_id in ids:
        if item_id not in position:
            raise record_error(where, item_id, "id", "not found in the dataset")
        yield row_to_item(dataset[position[item_id]], where)


def load_items(dataset: datasets.Dataset, limit: int | None, where: str) -> list[Item]:
    """All items of a run at once (small runs, tests and the Space)."""
    check_columns(dataset, where)
    return list(iter_items(dataset, item_ids(dataset, limit), where))


def undecoded_rows(dataset: datasets.Dataset, columns: Sequence[str], n: int) -> Iterator[dict[str, Any]]:
    """The first ``n`` rows' ``columns``, a few at a time, images as their stored bytes or path and
    class labels as their indices (nothing decoded)."""
    table = dataset.select_columns(list(columns)).select(range(n)).with_format("arrow")[:]
    for batch in table.to_batches(max_chunksize=64):
        yield from batch.to_pylist()


def check_images(dataset: datasets.Dataset, n: int, where: str) -> None:
    """Decode every image of the first ``n`` rows, the item's and each counterfactual's, as a run
    decodes them (:func:`decode_image`); the first that fails is one error naming ``where``, the
    record and the field (``image``, ``counterfactuals[i].image``)."""
    import datasets as hf

    feature = dataset.features.get("image")
    decoder = hf.Image(mode=feature.mode) if isinstance(feature, hf.Image) else hf.Image()
    with_counterfactuals = COUNTERFACTUALS_FIELD in dataset.column_names
    columns = ["id", "image", *([COUNTERFACTUALS_FIELD] if with_counterfactuals else [])]
    for row in undecoded_rows(dataset, columns, n):
        rid = str(row["id"])
        decode_image(decoder, row["image"], where, rid, "image")
        for position, entry in enumerate(row.get(COUNTERFACTUALS_FIELD) or []):
            stored = entry.get("image") if isinstance(entry, Mapping) else None
            decode_image(hf.Image(), stored, where, rid, f"{COUNTERFACTUALS_FIELD}[{position}].image")


_DECODE_ERRORS: tuple[type[Exception], ...] = (
    OSError,  # UnidentifiedImageError, truncated data
    ValueError,  # a broken EXIF or XMP block (UnicodeDecodeError), a mode without an RGB conversion
    SyntaxError,  # a broken PNG chunk
    EOFError,
    TypeError,
    IndexError,
    struct.error,
)
"""What Pillow raises on a malformed file (its decoders are not limited to ``OSError``)."""
_PIXELS = re.compile(r"\((\d+) pixels\)")


def decode_image(decoder: Any, stored: Any, where: str, rid: str, field: str) -> Any:
    """``stored`` (``{"bytes", "path"}``) decoded by ``decoder`` (``datasets.Image``: the file's EXIF
    orientation applied) and converted to RGB, as :meth:`Item.from_row` gets it; an image over
    Pillow's pixel limit (``PIL.Image.MAX_IMAGE_PIXELS``: a decompression bomb) is refused before
    its pixels are decoded."""
    from PIL import Image, UnidentifiedImageError

    if not isinstance(stored, Mapping) or (stored.get("bytes") is None and stored.get("path") is None):
        raise record_error(where, rid, field, "no image")
    try:
        with warnings.catch_warnings():
            # Pillow only warns between its limit and twice it, then decodes: refuse from the limit.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return decoder.decode_example(dict(stored)).convert("RGB")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        found = _PIXELS.search(str(err))
        size = f"{int(found[1])} pixels" if found else "the image"
        raise record_error(
            where, rid, field, f"{size} is over the limit of {Image.MAX_IMAGE_PIXELS} (decompression bomb)"
        ) from None
    except UnidentifiedImageError:  # its text names a BytesIO object, not the file
        raise record_error(
            where, rid, field, "unreadable or corrupt image (not an image format Pillow reads)"
        ) from None
    except _DECODE_ERRORS as err:
        raise record_error(
            where, rid, field, f"unreadable or corrupt image ({first_line(err, 200)})"
        ) from None
