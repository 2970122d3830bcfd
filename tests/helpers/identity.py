"""The model identity a run records (results.json's ``model``), as the tests write it."""

from __future__ import annotations

from typing import Any


def model_identity(model_id: str = "org/model", **fields: Any) -> dict[str, Any]:
    """A float32 ``hf`` model with no local path and no revision; ``fields`` add or override keys
    (``revision=...``, ``chat_template_sha256=...``)."""
    return {"id": model_id, "path": None, "revision": None, "dtype": "float32", "adapter": "hf", **fields}
