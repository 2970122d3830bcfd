"""Where ``curate select`` reads images from: a class-folder tree or a ``datasets`` dataset.

Both sources list their items up front without decoding any image (so bad structure fails before
any work), then decode one image at a time on request. Every problem is one
:class:`MMSpuBenchError` naming the file or the dataset row and column.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mmspubench.dataset_builder.files import MAX_IMAGE_BYTES, open_regular
from mmspubench.errors import MMSpuBenchError

if TYPE_CHECKING:
    from PIL.Image import Image

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png"})
"""File suffixes (compared lower-cased) a class folder may hold."""


@dataclass(frozen=True, slots=True)
class SourceItem:
    """One image of a source, not decoded."""

    position: int
    """0-based position in the source's fixed order (the candidate id is derived from it)."""
    ref: str | int
    """Path relative to the folder root (POSIX form), or the dataset row index."""
    class_name: str
    """The image's true class name."""


class ImageSource(Protocol):
    """A listed set of labelled images that decodes one image at a time."""

    @property
    def class_names(self) -> tuple[str, ...]:
        """Every class name, in a fixed order."""
        ...

    @property
    def items(self) -> tuple[SourceItem, ...]:
        """Every image, in a fixed order."""
        ...

    def describe(self) -> dict[str, Any]:
        """What ``selection.json`` records about the source (enough for ``annotate`` to reopen it)."""
        ...

    def load(self, ref: str | int) -> Image:
        """The decoded RGB image of ``ref``."""
        ...


def open_rgb(path: Path, formats: tuple[str, ...] | None = None) -> Image:
    """Decode an image file fully as RGB; a file that is not an image, or (with ``formats``) whose
    real format, sniffed from its bytes, is not one of them, is one clear error."""
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            with open_regular(path, MAX_IMAGE_BYTES, "an image") as fh, PILImage.open(fh) as im:
                if formats is not None and im.format not in formats:
                    raise MMSpuBenchError(
                        f"{path}: a {im.format} image (whatever its name says); `curate annotate` and "
                        f"`build` take only {', '.join(formats)}: convert it or remove it"
                    )
                return im.convert("RGB")
    except (
        UnidentifiedImageError,
        OSError,
        SyntaxError,
        ValueError,
        PILImage.DecompressionBombWarning,
    ) as err:
        raise MMSpuBenchError(f"{path}: not a readable image ({type(err).__name__}: {err})") from None


class _Listed:
    """The listing part of a source: class names and items, fixed when the source is opened."""

    _classes: tuple[str, ...]
    _items: tuple[SourceItem, ...]

    @property
    def class_names(self) -> tuple[str, ...]:
        """Every class name, in a fixed order."""
        return self._classes

    @property
    def items(self) -> tuple[SourceItem, ...]:
        """Every image, in a fixed order."""
        return self._items


class FolderSource(_Listed):
    """``ROOT/<class name>/*.jpg|jpeg|png``: every class folder must hold at least one image and
    nothing else (no other files, no sub-folders, nothing but regular files), so nothing is skipped
    silently. Each image's real format is checked when it is decoded, by the rule ``annotate`` and
    ``build`` apply (:data:`~mmspubench.dataset_builder.images.IMAGE_FORMATS`), so a GIF renamed
    ``.png`` stops ``select`` rather than a later step."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():
            raise MMSpuBenchError(f"--data {root}: no such folder or dataset")
        classes = sorted(p for p in self.root.iterdir())
        strays = [p for p in classes if not p.is_dir()]
        if strays:
            raise MMSpuBenchError(
                f"{strays[0]}: a file at the top level; expected only class folders ROOT/<class name>/"
            )
        if not classes:
            raise MMSpuBenchError(f"{self.root}: no class folders; expected ROOT/<class name>/*.jpg|png")
        items: list[SourceItem] = []
        for folder in classes:
            files = sorted(folder.iterdir())
            if not files:
                raise MMSpuBenchError(f"{folder}: class folder {folder.name!r} has no images")
            for path in files:
                if path.is_dir() or path.suffix.lower() not in IMAGE_SUFFIXES:
                    raise MMSpuBenchError(
                        f"{path}: not a .jpg/.jpeg/.png file; a class folder holds only images"
                    )
                if not path.is_file():  # a FIFO would hang the decoder, a device never end
                    raise MMSpuBenchError(f"{path}: not a regular file (a FIFO, a device or a broken link)")
                ref = path.relative_to(self.root).as_posix()
                items.append(SourceItem(position=len(items), ref=ref, class_name=folder.name))
        self._classes = tuple(p.name for p in classes)
        self._items = tuple(items)

    def describe(self) -> dict[str, Any]:
        return {"kind": "folder", "path": str(self.root)}

    def load(self, ref: str | int) -> Image:
        from mmspubench.dataset_builder.images import IMAGE_FORMATS

        return open_rgb(self.root / str(ref), IMAGE_FORMATS)


class DatasetSource(_Listed):
    """A ``datasets`` dataset (local folder or Hub id) with an Image column and a label column
    holding ClassLabel integers or class-name strings."""

    def __init__(self, data: str, split: str, image_column: str, label_column: str) -> None:
        import datasets

        self.data, self.split = data, split
        self.image_column, self.label_column = image_column, label_column
        self.dataset = _load_dataset(data, split)
        features = self.dataset.features
        for column in (image_column, label_column):
            if column not in features:
                raise MMSpuBenchError(
                    f"--data {data}: no column {column!r} (columns: {', '.join(features)}); "
                    "pass --image-column/--label-column"
                )
        if not isinstance(features[image_column], datasets.Image):
            raise MMSpuBenchError(f"--data {data}: column {image_column!r} is not an Image column")
        self._classes, self._items = self._list(features[label_column])

    def _list(self, feature: Any) -> tuple[tuple[str, ...], tuple[SourceItem, ...]]:
        import datasets

        labels = self.dataset.select_columns([self.label_column])[self.label_column]
        if isinstance(feature, datasets.ClassLabel):
            names = tuple(feature.names)
        elif isinstance(feature, datasets.Value) and feature.dtype in ("string", "large_string"):
            names = tuple(sorted({v for v in labels if isinstance(v, str) and v.strip()}))
        else:
            raise MMSpuBenchError(
                f"--data {self.data}: label column {self.label_column!r} is {feature}; "
                "expected a ClassLabel or a string column"
            )
        items = []
        for row, value in enumerate(labels):
            name = _label_name(value, names)
            if name is None:
                raise MMSpuBenchError(
                    f"--data {self.data}: row {row}: column {self.label_column!r}: unknown label {value!r}; "
                    f"expected one of the {len(names)} class names"
                )
            items.append(SourceItem(position=row, ref=row, class_name=name))
        if not items:
            raise MMSpuBenchError(f"--data {self.data}: split {self.split!r} has no rows")
        return names, tuple(items)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "dataset",
            "path": self.data,
            "split": self.split,
            "image_column": self.image_column,
            "label_column": self.label_column,
            "fingerprint": getattr(self.dataset, "_fingerprint", None),
        }

    def load(self, ref: str | int) -> Image:
        from PIL import Image as PILImage

        try:
            image = self.dataset[int(ref)][self.image_column]
        except (OSError, ValueError, SyntaxError) as err:
            raise MMSpuBenchError(
                f"--data {self.data}: row {ref}: column {self.image_column!r}: not a readable image ({err})"
            ) from None
        if not isinstance(image, PILImage.Image):
            raise MMSpuBenchError(f"--data {self.data}: row {ref}: column {self.image_column!r}: no image")
        return image.convert("RGB")


def _label_name(value: Any, names: tuple[str, ...]) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return names[value] if 0 <= value < len(names) else None
    if isinstance(value, str) and value in names:
        return value
    return None


def _load_dataset(data: str, split: str) -> Any:
    import datasets

    path = Path(data).expanduser()
    if not path.exists() and (data.startswith((".", "/", "~")) or data.count("/") > 1):
        raise MMSpuBenchError(
            f"--data {data}: no such folder; expected a class-folder tree, a dataset folder or a Hub id"
        )
    published = _published_raw_release(data, split) if not path.exists() else None
    if published is not None:
        return published
    try:
        if (path / "state.json").is_file() or (path / "dataset_dict.json").is_file():
            loaded = datasets.load_from_disk(str(path))
            return loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
        return datasets.load_dataset(str(path) if path.is_dir() else data, split=split)
    except (OSError, ValueError, KeyError, datasets.exceptions.DatasetNotFoundError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MMSpuBenchError(
            f"--data {data}: not an image-class folder tree and not a loadable dataset split {split!r} ({first})"
        ) from None


def _published_raw_release(data: str, split: str) -> Any:
    """A Hub id holding a raw release (the published benchmark's layout): its build, else ``None``."""
    from mmspubench.dataset_builder.hub import is_hub_id
    from mmspubench.dataset_builder.hub_release import resolve_snapshot
    from mmspubench.dataset_builder.load import load_benchmark

    if not is_hub_id(data) or "/" not in data:
        return None
    try:
        layout = resolve_snapshot(data, fetch_data=False).layout
    except MMSpuBenchError:
        return None  # not reachable or not cached: datasets reports it below as for any Hub id
    return load_benchmark(data, split=split) if layout == "raw" else None


def open_source(
    data: str, *, split: str = "train", image_column: str = "image", label_column: str = "label"
) -> ImageSource:
    """A :class:`FolderSource` when ``data`` is a folder of class folders, else a :class:`DatasetSource`."""
    path = Path(data).expanduser()
    if path.is_dir() and not _looks_like_dataset(path):
        return FolderSource(path)
    return DatasetSource(data, split, image_column, label_column)


def _looks_like_dataset(path: Path) -> bool:
    markers = ("state.json", "dataset_dict.json", "README.md")
    return (
        any((path / m).is_file() for m in markers)
        or any(path.glob("*.parquet"))
        or any(path.glob("data/*.parquet"))
    )


def reopen_source(described: dict[str, Any]) -> ImageSource:
    """The source ``describe()`` recorded in ``selection.json``."""
    if described.get("kind") == "folder":
        return FolderSource(Path(described["path"]))
    return DatasetSource(
        described["path"], described["split"], described["image_column"], described["label_column"]
    )
