"""Load the benchmark from a built folder, a raw release or a Hub id, always with ``schema.FEATURES``.

A raw release is built once into a cache folder named by the content hash of the release, so a
changed release is rebuilt and an unchanged one is reused. ``dataset_identity`` gives what a
result file records to pin the data: the id or path, and a Hub revision or a content hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mmspubench.dataset_builder.defaults import cache_root
from mmspubench.dataset_builder.files import (
    MAX_DATASET_FILE_BYTES,
    MAX_TEXT_BYTES,
    open_regular,
    read_text_bounded,
)
from mmspubench.dataset_builder.hub import hub_offline, is_hub_id
from mmspubench.dataset_builder.raw import ANNOTATION_FILE, UnknownKeyPolicy
from mmspubench.errors import MMSpuBenchError

if TYPE_CHECKING:
    import datasets

DatasetKind = Literal["hub", "built", "raw"]
BUILD_FORMAT_VERSION = "3"
"""Bumped when the build output or the content hash changes for the same input, so cached builds
are redone (3: PNG and Parquet files hashed by their decoded content, no encoded sizes in the card)."""


@dataclass(frozen=True, slots=True)
class DatasetRef:
    """Where a ``--dataset`` argument points."""

    kind: DatasetKind
    """A Hub id, a built Hub-layout folder, or a raw release folder."""
    location: str
    """The Hub id, or the resolved local path."""


def classify(dataset: str | Path) -> DatasetRef:
    """Tell a built folder, a raw release and a Hub id apart; raise for a local path that is neither."""
    path = Path(dataset).expanduser()
    if path.is_dir():
        resolved = str(path.resolve())
        if (path / ANNOTATION_FILE).is_file():
            return DatasetRef("raw", resolved)
        if (path / "README.md").is_file() or any((path / "data").glob("*.parquet")):
            return DatasetRef("built", resolved)
        raise MMSpuBenchError(
            f"{path}: neither a built dataset folder (README.md + data/*.parquet) nor a raw release ({ANNOTATION_FILE})"
        )
    text = str(dataset)
    if path.exists() or not is_hub_id(text):
        raise MMSpuBenchError(f"{text}: not a dataset folder and not a Hub dataset id like org/name")
    return DatasetRef("hub", text)


def content_hash(folder: Path) -> str:
    """SHA-256 over every file of ``folder`` (relative path and content, in sorted order): PNG and
    Parquet files by what they decode to, so the hash does not depend on the encoder that wrote them
    (:mod:`~mmspubench.dataset_builder.content_hash`)."""
    from mmspubench.dataset_builder import content_hash as hashing

    return hashing.content_hash(folder, f"mmspubench-build-{BUILD_FORMAT_VERSION}")


def built_folder_for(
    release: Path, digest: str | None = None, unknown_keys: UnknownKeyPolicy = "error"
) -> Path:
    """The cached build of a raw release, built now if it is not there yet.

    ``digest`` is the release's ``content_hash`` when the caller has it already (hashing reads
    every image of the release). A build that dropped unknown keys is cached apart, so a later
    ``error`` load still refuses them. A cached build is used only when its content is what its
    cache record says it was when it was built; otherwise it is built again.
    """
    from mmspubench.dataset_builder.builder import BuildOptions, build_repo
    from mmspubench.dataset_builder.cache_record import verified_hash, write_record

    digest = digest or content_hash(release)
    name = digest[:32] + ("-ignore" if unknown_keys == "ignore" else "")
    target = cache_root() / "builds" / name
    made_from = {"release_hash": digest, "unknown_keys": unknown_keys, "format": BUILD_FORMAT_VERSION}
    if verified_hash(target, made_from) is None:  # missing, half-written, edited or truncated: rebuilt
        build_repo(release, target, overwrite=True, options=BuildOptions(unknown_keys=unknown_keys))
        write_record(target, made_from)
    return target


def load_benchmark(
    dataset: str | Path,
    split: str = "test",
    *,
    revision: str | None = None,
    unknown_keys: UnknownKeyPolicy = "error",
) -> datasets.Dataset:
    """The benchmark split as a ``datasets.Dataset`` whose features equal ``schema.FEATURES``.

    ``revision``: a Hub id's branch, tag or commit (default ``main``). ``unknown_keys``: what a raw
    release's keys outside ``raw.KEY_TABLE`` do (``error`` or ``ignore``), as ``build``'s option.
    """
    return load_pinned(dataset, split, revision=revision, unknown_keys=unknown_keys)[0]


def load_pinned(
    dataset: str | Path,
    split: str = "test",
    *,
    revision: str | None = None,
    unknown_keys: UnknownKeyPolicy = "error",
) -> tuple[datasets.Dataset, dict[str, Any]]:
    """``load_benchmark`` and ``dataset_identity`` together, a local folder read for its hash once."""
    ref = classify(dataset)
    if ref.kind == "hub":
        ds, identity = _load_hub(ref.location, split, revision, unknown_keys)
    else:
        if revision is not None:
            raise MMSpuBenchError(f"{dataset}: a revision applies to a Hub dataset id, not a local folder")
        digest = content_hash(Path(ref.location))
        folder = Path(ref.location)
        if ref.kind == "raw":
            folder = built_folder_for(folder, digest, unknown_keys)
        ds, identity = _load_local(folder, split), _identity(ref, digest)
    check_features(ds, str(dataset))
    return ds, identity


def _load_local(folder: Path, split: str) -> datasets.Dataset:
    """Read ``folder/data/{split}-*.parquet``.

    The files are passed to the ``parquet`` builder directly rather than loading the folder by
    name: ``datasets`` keys its cache for a folder with a ``configs`` card on the folder name and
    card only, so a folder rebuilt in place with same-sized data would come back stale. Listing the
    files keys the cache on their modification times as well.
    """
    import datasets

    files = sorted(str(p) for p in (folder / "data").glob(f"{split}-*.parquet"))
    if not files:
        found = sorted({p.name.split("-")[0] for p in (folder / "data").glob("*.parquet")})
        raise MMSpuBenchError(
            f"{folder}: cannot load split {split!r}: no data/{split}-*.parquet (splits here: {found})"
        )
    for file in files:  # a FIFO would block the Parquet reader forever
        open_regular(file, MAX_DATASET_FILE_BYTES, "a Parquet shard").close()
        _check_parquet(Path(file))
    verbosity = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:  # datasets logs a failed read as well as raising it: the error line below says it once
        ds = datasets.load_dataset("parquet", data_files={split: files}, split=split)
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetGenerationError) as err:
        raise MMSpuBenchError(f"{folder}: cannot load split {split!r}: {err}") from None
    finally:
        datasets.logging.set_verbosity(verbosity)
    assert isinstance(ds, datasets.Dataset)  # split is given, so never a DatasetDict
    return ds


def _check_parquet(path: Path) -> None:
    """One line for a shard whose Parquet footer cannot be read (a truncated or overwritten file)."""
    import pyarrow.parquet as pq

    try:
        pq.ParquetFile(path).close()
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise MMSpuBenchError(
            f"{path}: not a readable Parquet file ({str(err).splitlines()[0]}); rebuild the folder with "
            "mmspubench build"
        ) from None


def network_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the Hub could not be reached or refused", whichever HTTP client is in use."""
    import importlib

    from huggingface_hub.errors import HfHubHTTPError

    errors: list[type[BaseException]] = [OSError, HfHubHTTPError]
    for client in ("httpx", "httpx2"):
        try:
            errors.append(importlib.import_module(client).HTTPError)
        except (ImportError, AttributeError):
            continue  # that client is not installed: nothing of it to catch
    return tuple(errors)


def _load_hub(
    repo_id: str, split: str, revision: str | None, unknown_keys: UnknownKeyPolicy
) -> tuple[datasets.Dataset, dict[str, Any]]:
    """A Hub dataset at ``revision``: our built layout read as is, a raw release built into the cache."""
    from mmspubench.dataset_builder.hub_release import built_for, release_copy, resolve_snapshot

    snapshot = resolve_snapshot(repo_id, revision)
    digest = None
    folder = snapshot.folder
    if snapshot.layout == "raw":
        _, digest = release_copy(snapshot)
        folder = built_for(snapshot, digest, unknown_keys)
    identity = {
        "kind": "hub",
        "id": repo_id,
        "path": None,
        "revision": snapshot.revision,
        "content_hash": digest,
    }
    if snapshot.layout == "built" and not any((folder / "data").glob("*.parquet")):
        return _load_hub_other(repo_id, split, snapshot.revision), identity  # not our file names
    return _load_local(folder, split), identity


def _load_hub_other(repo_id: str, split: str, revision: str) -> datasets.Dataset:
    """A Hub dataset in another Parquet layout, read by ``datasets`` at the commit."""
    import datasets

    try:
        ds = datasets.load_dataset(repo_id, split=split, revision=revision)
    except (datasets.exceptions.DatasetNotFoundError, *network_errors()) as err:
        hint = " (offline mode is on and the dataset is not in the local cache)" if hub_offline() else ""
        raise MMSpuBenchError(
            f"{repo_id}: Hub dataset not found or not reachable{hint}; pass a local built folder or raw "
            f"release instead ({type(err).__name__}: {err})"
        ) from None
    except ValueError as err:
        raise MMSpuBenchError(f"{repo_id}: cannot load split {split!r}: {err}") from None
    assert isinstance(ds, datasets.Dataset)
    return ds


def check_features(ds: datasets.Dataset, where: str) -> None:
    """Raise unless ``ds`` has exactly the schema's fields with the schema's types (the optional
    ``counterfactuals`` field included or not)."""
    from mmspubench.dataset_builder.schema import FEATURES, FEATURES_WITH_COUNTERFACTUALS

    if ds.features in (FEATURES, FEATURES_WITH_COUNTERFACTUALS):
        return
    missing = [name for name in FEATURES if name not in ds.features]
    if missing:
        raise MMSpuBenchError(
            f"{where}: missing required field(s) {', '.join(missing)}; expected {', '.join(FEATURES)}"
        )
    for name, feature in FEATURES.items():
        if ds.features[name] != feature:
            raise MMSpuBenchError(f"{where}: field {name!r} has type {ds.features[name]}; expected {feature}")
    extra = [name for name in ds.features if name not in FEATURES_WITH_COUNTERFACTUALS]
    if not extra:
        name = next(iter(set(ds.features) - set(FEATURES)))
        raise MMSpuBenchError(
            f"{where}: field {name!r} has type {ds.features[name]}; expected {FEATURES_WITH_COUNTERFACTUALS[name]}"
        )
    raise MMSpuBenchError(
        f"{where}: unexpected field(s) {', '.join(extra)}; expected exactly {', '.join(FEATURES)}"
    )


def dataset_identity(dataset: str | Path) -> dict[str, Any]:
    """``{"kind", "id", "path", "revision", "content_hash"}`` pinning the data a result came from."""
    return _identity(classify(dataset), None)


def _identity(ref: DatasetRef, digest: str | None) -> dict[str, Any]:
    if ref.kind == "hub":
        return {
            "kind": "hub",
            "id": ref.location,
            "path": None,
            "revision": hub_revision(ref.location),
            "content_hash": None,
        }
    digest = digest or content_hash(Path(ref.location))
    return {"kind": ref.kind, "id": None, "path": ref.location, "revision": None, "content_hash": digest}


def hub_revision(repo_id: str) -> str | None:
    """The commit sha of the dataset's ``main``: asked of the Hub, else read from the local cache."""
    from huggingface_hub import HfApi, constants

    if not hub_offline():
        try:
            sha = HfApi().dataset_info(repo_id).sha
            return str(sha) if sha else None
        except network_errors():
            pass  # fall back to the cached ref below: a missing revision is recorded as null
    ref = Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}" / "refs" / "main"
    return read_text_bounded(ref, MAX_TEXT_BYTES, "a Hub cache ref").strip() if ref.is_file() else None
