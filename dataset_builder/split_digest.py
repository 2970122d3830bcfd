"""A published split's size and sorted-id digest, computed from the data at a Hub revision.

``submit`` needs the published split's item set. A card written by ``build`` declares it
(``split_ids.CARD_KEY``); a card that does not (the published raw release's) leaves the data at
that revision to tell: the ids of the raw release's records (the position when records carry no
id, as ``build`` assigns them), or the ``id`` column of the Parquet files. Either way they are
digested as ``eval`` records them (:func:`split_ids.split_identity`).
"""

from __future__ import annotations

from mmspubench.dataset_builder.hub_release import resolve_snapshot
from mmspubench.dataset_builder.raw import read_annotation
from mmspubench.dataset_builder.split_ids import split_identity
from mmspubench.errors import MMSpuBenchError

RAW_SPLIT = "test"
"""The split a raw release is built into."""


def split_from_data(dataset_id: str, revision: str, split: str = RAW_SPLIT) -> tuple[int, str]:
    """``(n, ids_sha256)`` of ``split`` of the dataset at ``revision``, from its records."""
    snapshot = resolve_snapshot(dataset_id, revision, fetch_data=False)
    where = f"{dataset_id}@{snapshot.revision[:12]}"
    if snapshot.layout == "raw":
        if split != RAW_SPLIT:
            raise MMSpuBenchError(f"{where}: a raw release is the {RAW_SPLIT!r} split only, not {split!r}")
        # Only the ids are read: keys the table does not know do not change them.
        ids = [entry.id for entry in read_annotation(snapshot.folder, unknown_keys="ignore")]
    else:
        ids = _parquet_ids(dataset_id, revision, split)
    if not ids:
        raise MMSpuBenchError(f"{where}: split {split!r} holds no records")
    identity = split_identity(ids)
    return int(identity["split_n"]), str(identity["ids_sha256"])


def _parquet_ids(dataset_id: str, revision: str, split: str) -> list[str]:
    import pyarrow.parquet as pq

    snapshot = resolve_snapshot(dataset_id, revision)
    files = sorted((snapshot.folder / "data").glob(f"{split}-*.parquet"))
    if not files:
        raise MMSpuBenchError(
            f"{dataset_id}@{snapshot.revision[:12]}: no data/{split}-*.parquet to read the split's ids from"
        )
    ids: list[str] = []
    for path in files:
        try:
            column = pq.read_table(path, columns=["id"]).column("id")
        except (OSError, KeyError, ValueError) as err:
            raise MMSpuBenchError(f"{path.name}: cannot read the 'id' column ({err})") from None
        ids.extend(str(value) for value in column.to_pylist())
    return ids
