"""The identity of a split's item set: its size and a digest of its sorted ids.

``build`` writes it into the dataset card's metadata (key ``CARD_KEY``), ``eval`` records it from
the dataset into run.json and results.json (``dataset.split_n``, ``dataset.ids_sha256``), and
``submit`` requires a run's sample ids to be exactly the published split's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

CARD_KEY = "mmspubench_split_ids"
"""Dataset-card metadata key: ``{split: {"n": N, "sha256": digest}}``."""


def ids_digest(ids: Iterable[str]) -> str:
    """SHA-256 of the ids, sorted, one per line (order-free: a run's samples may finish in any order)."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8", "surrogatepass")).hexdigest()


def split_identity(ids: Iterable[str]) -> dict[str, Any]:
    """``{"split_n": N, "ids_sha256": digest}``, the fields a result file records."""
    ids = list(ids)
    return {"split_n": len(ids), "ids_sha256": ids_digest(ids)}
