"""The benchmark split as the adapters see it: items with their image bytes, read by our loader."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmspubench.dataset_builder.schema import Item
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts


@dataclass(frozen=True, slots=True)
class SplitItem:
    """One item and the encoded bytes of its image: the pixels ``mmspubench eval`` shows, whichever
    reader decodes them."""

    item: Item
    """The decoded item (``schema.Item``)."""
    image_bytes: bytes
    """The image file's bytes (PNG or JPEG) as the dataset stores them; for a file whose EXIF
    orientation turns its pixels, the PNG of the pixels eval shows (``orientation.as_shown``), so a
    reader that ignores EXIF shows them too."""

    @property
    def mime(self) -> str:
        """``image/png`` or ``image/jpeg``, read from the bytes."""
        return "image/png" if self.image_bytes.startswith(b"\x89PNG\r\n\x1a\n") else "image/jpeg"

    @property
    def data_uri(self) -> str:
        """The image as a ``data:`` URI."""
        return f"data:{self.mime};base64,{base64.b64encode(self.image_bytes).decode('ascii')}"

    @property
    def user_text(self) -> str:
        """The multiple-choice user text of ``mmspubench eval --answer-mode generate``."""
        return prompts.mcq_prompt(self.item.question, self.item.options, "generate").user_text


@dataclass(frozen=True, slots=True)
class Split:
    """A loaded split: its items in dataset order and the identity ``mmspubench eval`` records."""

    items: tuple[SplitItem, ...]
    """Every item of the split (or the first ``limit``), in dataset order."""
    identity: dict[str, Any]
    """``results.json``'s ``dataset`` section: kind, id or path, revision or hash, split ids."""
    all_ids: tuple[str, ...]
    """Every id of the split (not only the first ``limit``)."""


def load_split(
    dataset: str | None, revision: str | None = None, split: str = "test", limit: int | None = None
) -> Split:
    """The split ``mmspubench eval --dataset DATASET --dataset-revision REVISION`` reads (default:
    the bundled release), with each item's image bytes (:attr:`SplitItem.image_bytes`)."""
    import datasets as hf
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.dataset_builder.orientation import as_shown
    from mmspubench.dataset_builder.split_ids import split_identity
    from mmspubench.eval import data

    if dataset is None:
        from mmspubench.dataset_builder.defaults import default_dataset_dir

        dataset = str(default_dataset_dir())
    ds, identity = load_pinned(dataset, split, revision=revision)
    all_ids = data.item_ids(ds, None)
    ids = data.item_ids(ds, limit)
    data.check_images(ds, len(ids), dataset)
    raw = ds.select(range(len(ids))).cast_column("image", hf.Image(decode=False))["image"]
    items = []
    for item, image in zip(data.iter_items(ds, ids, dataset), raw, strict=True):
        if not isinstance(image, dict) or not isinstance(image.get("bytes"), bytes):
            raise MMSpuBenchError(f"{dataset}: record {item.id!r}: field 'image': no stored bytes")
        items.append(SplitItem(item, as_shown(image["bytes"], item.pil_image)))
    return Split(tuple(items), {**identity, **split_identity(all_ids)}, tuple(all_ids))


def by_id(items: Sequence[SplitItem]) -> dict[str, SplitItem]:
    """Items keyed by id."""
    return {s.item.id: s for s in items}
