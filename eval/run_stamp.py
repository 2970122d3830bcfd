"""Each samples.jsonl line carries the identity of the run that wrote it (field ``run``).

A resumed run checks every line already in the folder against its own stamp, so samples copied in
from another run (another model, dataset, answer mode or option) are refused instead of being
reported under this run's configuration. Readers that do not know the field ignore it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.files import iter_lines_bounded
from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results_file import Results

STAMP_FIELD = "run"
"""Name of the stamp field in each samples.jsonl line."""

MODEL_KEYS = ("id", "path", "revision", "dtype", "adapter")
"""The model's identity fields every run records."""
MODEL_SETTING_KEYS = ("chat_template_sha256", "image_settings_sha256", "reasoning_effort")
"""The model's settings that change its scores by design, in its identity where the engine reports
them (runs written before they were recorded have none; ``reasoning_effort``: only where a server
run sends one). ``--thinking`` is in the config's identity when set; under ``auto`` the chat
template's SHA-256 fixes what the model does, so a run written before the option resumes."""


def model_identity(model: Mapping[str, Any]) -> dict[str, Any]:
    """The model's identity as a run stamps it: :data:`MODEL_KEYS`, then the :data:`MODEL_SETTING_KEYS`
    ``model`` holds (results.json's ``model`` section, or the engine's own description)."""
    return {
        **{key: model.get(key) for key in MODEL_KEYS},
        **{key: model[key] for key in MODEL_SETTING_KEYS if key in model},
    }


def run_stamp(config: Mapping[str, Any], dataset: Mapping[str, Any], model: Mapping[str, Any]) -> str:
    """A short digest of what makes a run: the config identity, the dataset and the model identity."""
    text = json.dumps({"config": config, "dataset": dataset, "model": model}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def foreign_stamp(path: Path, stamp: str, shown: str, *, complete_only: bool) -> tuple[int, Any, Any] | None:
    """The first line of ``path`` not written by the run ``stamp``: (line number, record id, the
    stamp it carries or ``None``); ``None`` when every line is the run's. ``shown`` names the file in
    a JSON error; ``complete_only`` skips a last line without its newline (a run cut mid-write)."""
    return foreign_line(
        iter_lines_bounded(path, "a samples.jsonl file"), stamp, shown, complete_only=complete_only
    )


def foreign_line(
    lines: Iterable[tuple[int, bytes]], stamp: str, shown: str, *, complete_only: bool
) -> tuple[int, Any, Any] | None:
    """:func:`foreign_stamp` of lines already read (``(number, line)``, newline kept)."""
    for number, line in lines:
        if not line.strip() or (complete_only and not line.endswith(b"\n")):
            continue
        record = loads_strict(line, f"{shown}: line {number}")
        found = record.get(STAMP_FIELD) if isinstance(record, dict) else None
        if found != stamp:
            return number, record.get("id") if isinstance(record, dict) else None, found
    return None


def results_stamp(results: Results | Mapping[str, Any], config_identity: Mapping[str, Any]) -> str:
    """The stamp every sample of the run a results.json describes carries: its config identity,
    its dataset as the run pinned it (less ``split`` and ``n``, which the run adds at the end) and
    its model identity."""
    typed = Results.of(results, "results.json")
    recorded = typed.dataset.to_json() if typed.dataset is not None else {}
    dataset = {k: v for k, v in recorded.items() if k not in ("split", "n")}
    model = typed.model.to_json() if typed.model is not None else {}
    return run_stamp(config_identity, dataset, model_identity(model))


def _recorded_stamp(results: Results | Mapping[str, Any], results_path: Path) -> str:
    """:func:`results_stamp` of a parsed results.json, its config read back (one line if malformed)."""
    typed = Results.of(results, results_path)
    return results_stamp(typed, typed.run_config(results_path).identity())


def check_samples_beside(
    samples_path: Path, results: Results | Mapping[str, Any], results_path: Path
) -> None:
    """Refuse a samples.jsonl that is not the one the run of ``results`` (read from
    ``results_path``) wrote: a line stamped by another run, or a line without a stamp among stamped
    ones. The readers of a finished run (``compare``, ``report --plot``, the Space) call it, as a
    resume does: samples copied in from another run would otherwise be shown under this run's name.

    A file none of whose lines carries a stamp (written before runs stamped their samples) cannot
    be told from another run's and is read as before.
    """
    expected: str | None = None
    unstamped: tuple[int, Any] | None = None
    stamped = False
    for number, line in iter_lines_bounded(samples_path, "a samples.jsonl file"):
        if not line.strip():
            continue
        record = loads_strict(line, f"{samples_path}: line {number}")
        rid = record.get("id") if isinstance(record, dict) else None
        found = record.get(STAMP_FIELD) if isinstance(record, dict) else None
        if found is None:
            unstamped = unstamped or (number, rid)
            continue
        stamped = True
        expected = expected or _recorded_stamp(results, results_path)
        if found != expected:
            raise _foreign(samples_path, number, rid, f"was written by run {found!r}", expected, results_path)
    if stamped and unstamped is not None:
        number, rid = unstamped
        raise _foreign(samples_path, number, rid, "carries no run stamp", expected, results_path)


def _foreign(
    path: Path, number: int, rid: Any, what: str, expected: Any, results_path: Path
) -> MMSpuBenchError:
    """The one line refusing a sample another run wrote beside ``results_path``."""
    return MMSpuBenchError(
        f"{path}: line {number}: record {str(rid)[:80]!r}: field {STAMP_FIELD!r}: {what}, not by the run "
        f"{expected!r} that {results_path} describes (its config, dataset and model): the samples of "
        "another run are not read under its name"
    )


def check_stamps(path: Path, stamp: str, lines: Iterable[tuple[int, bytes]] | None = None) -> None:
    """Refuse ``path`` when any complete line was not written by the run ``stamp`` (``lines``: the
    file's lines when already read)."""
    if lines is None:
        if not path.exists():
            return
        lines = iter_lines_bounded(path, "a samples.jsonl file")
    foreign = foreign_line(lines, stamp, str(path), complete_only=True)
    if foreign is not None:
        number, rid, found = foreign
        what = "carries no run stamp" if found is None else f"was written by run {found!r}"
        raise MMSpuBenchError(
            f"{path}: line {number}: record {rid!r} {what}, not this run ({stamp!r}); "
            "refusing to mix runs; use another --out folder"
        )
