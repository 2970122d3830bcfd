"""One check for every output option: it never names an input, nor a file inside an input folder.

``compare A B --json A/samples.jsonl`` would replace run A's records with the comparison; a
``--plot`` into a run folder, an ``ingest --out`` over its own log or a ``space build --out``
inside the package's sources would all destroy or mix what the command reads. Every command with
an output option calls :func:`refuse_overlap` with its inputs before it writes anything.

Paths are compared after resolving symbolic links and ``..`` (a path that does not exist yet is
resolved through its nearest existing parent), and an existing output that is the same file as
an input under another name (a hard link) is caught too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from mmspubench.errors import MMSpuBenchError


def _resolved(path: str | Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve(strict=False)


MAX_SCANNED = 10_000
"""Files of an input folder compared with an existing output file (hard links); a run has a few."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _linked_into(out: Path, folder: Path) -> bool:
    """``out`` is an existing file that is also a file of ``folder`` under another name (a hard link)."""
    try:
        if not out.is_file() or out.stat().st_nlink < 2:
            return False
        key = (out.stat().st_dev, out.stat().st_ino)
        for k, path in enumerate(folder.rglob("*")):
            if k >= MAX_SCANNED:
                return False
            if path.is_file() and not path.is_symlink() and (path.stat().st_dev, path.stat().st_ino) == key:
                return True
    except OSError:
        return False
    return False


def overlap(output: str | Path, inputs: Iterable[str | Path], folder: bool = False) -> str | None:
    """Why ``output`` may not be written given ``inputs`` (files or folders), else ``None``.

    ``folder``: the output is a folder the command fills or replaces, so it may not hold an input
    either.
    """
    out = _resolved(output)
    for given in inputs:
        source = _resolved(given)
        if out == source or _same_file(out, source):
            return f"is the input {given}"
        if source.is_dir() and out.is_relative_to(source):
            return f"lies inside the input folder {given}"
        if source.is_dir() and _linked_into(out, source):
            return f"is a file of the input folder {given} (a hard link)"
        if folder and source.is_relative_to(out):
            return f"holds the input {given}"
    return None


def refuse_overlap(
    option: str, output: str | Path, inputs: Iterable[str | Path], folder: bool = False
) -> None:
    """Raise one line (``OPTION PATH: is the input ...``) when ``output`` overlaps an input."""
    reason = overlap(output, inputs, folder)
    if reason is not None:
        raise MMSpuBenchError(
            f"{option} {output}: {reason}; an output never replaces or joins what the command reads "
            "(choose a path outside the inputs)"
        )
