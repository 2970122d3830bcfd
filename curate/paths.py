"""The ``--out`` checks every curate step makes before it writes anything."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mmspubench.dataset_builder.staging import check_out_vs_source
from mmspubench.errors import MMSpuBenchError


def check_out(out: Path, overwrite: bool, inputs: Mapping[str, Path]) -> Path:
    """``out`` as a path; refused when it exists without ``--overwrite``, or when writing it would
    delete or change one of ``inputs`` (flag -> folder or file the step reads)."""
    out = Path(out)
    if (out.exists() or out.is_symlink()) and not overwrite:
        raise MMSpuBenchError(f"{out}: --out already exists; pass --overwrite to replace it")
    for flag, path in inputs.items():
        check_out_vs_source(Path(path), out, flag)
    return out
