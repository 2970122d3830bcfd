"""The run folder: ``run.json`` (manifest), ``samples.jsonl`` (per item) and ``results.json``.

- ``run.json`` is written before the first sample: the model, dataset and result-relevant options.
  A rerun into the same folder resumes only when they match, so a folder never mixes two runs.
- ``samples.jsonl`` gets one line per finished item, flushed and fsynced, so a killed run loses at
  most the item in flight. A trailing line without its newline (the run was killed while writing
  it) is dropped when the folder is reopened.
- ``results.json`` is computed from the samples by ``recompute`` and written atomically at the end;
  ``submit`` and the Space recompute the same figures from ``samples.jsonl`` with the same function.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, Any

from mmspubench.dataset_builder.files import iter_lines_bounded, shown
from mmspubench.dataset_builder.json_strict import load_file, loads_strict
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results_file import BENCHMARK, Accuracy, Cgla, Dataset, Model, Results, read_results_file
from mmspubench.eval.views import registry

SCHEMA_VERSION = 1
"""Version of the results.json / samples.jsonl layout."""
MANIFEST_NAME = "run.json"
SAMPLES_NAME = "samples.jsonl"
RESULTS_NAME = "results.json"


def package_version() -> str:
    """Installed version of the distribution."""
    try:
        return version("mm-spubench")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to a temporary file beside ``path``, fsync, then rename over it."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_bytes_atomic(path, [text.encode("utf-8")])


def write_bytes_atomic(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to a temporary file beside ``path``, fsync, then rename over it.

    A failure (also one raised while ``chunks`` is produced) leaves ``path`` as it was and no
    temporary file behind; an error names ``path``, never the temporary file. A folder, a device or
    a pipe at ``path`` is refused, never replaced. The file gets the
    mode the umask gives a new file (0644 under 022), as any file the user writes, not
    ``mkstemp``'s private 0600.
    """
    if path.is_dir():
        raise MMSpuBenchError(f"{path}: is a folder; expected a file name to write")
    if path.exists() and not path.is_file():  # a device (/dev/null), a pipe: never replaced by a file
        raise MMSpuBenchError(
            f"{path}: is not a regular file (a device or a pipe); expected a file name to write"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.replace(tmp, path)
        except OSError as err:  # name the file asked for, not the temporary one
            raise OSError(err.errno, err.strerror, str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sample_line(sample: SampleResult, stamp: str | None = None) -> bytes:
    """One ``samples.jsonl`` line, newline included; ``stamp`` is the writing run's identity."""
    obj = sample.to_json() if stamp is None else {**sample.to_json(), "run": stamp}
    return (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def read_samples(path: Path) -> tuple[list[SampleResult], int]:
    """Samples of a file and the byte length of its complete lines (a partial last line is ignored)."""
    if not path.exists() and not path.is_symlink():
        return [], 0
    return samples_of_lines(iter_lines_bounded(path, "a samples.jsonl file"), path)


def samples_of_lines(lines: Iterable[tuple[int, bytes]], path: Path) -> tuple[list[SampleResult], int]:
    """:func:`read_samples` of lines already read from ``path`` (``(number, line)``, newline kept)."""
    samples, complete = [], 0
    for number, line in lines:
        if not line.endswith(b"\n"):
            break  # the partial last line of a killed run
        complete += len(line)
        if not line.strip():
            continue
        record = loads_strict(line, f"{shown(path)}: line {number}: not a sample record")
        try:
            samples.append(SampleResult.from_json(record))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            label = record.get("id") if isinstance(record, dict) else None
            which = f"record {str(label)[:80]!r}: " if isinstance(label, (str, int)) else ""
            raise MMSpuBenchError(
                f"{shown(path)}: line {number}: not a sample record ({which}{err})"
            ) from err
    return samples, complete


def read_finished_samples(path: Path) -> list[SampleResult]:
    """Samples of a finished run's file: missing file or an incomplete last line is an error."""
    if not path.exists() and not path.is_symlink():
        raise MMSpuBenchError(f"{shown(path)}: no such samples file")
    samples, complete = read_samples(path)
    if complete != path.stat().st_size:
        raise MMSpuBenchError(f"{shown(path)}: the last line is incomplete (the run was interrupted)")
    return samples


class SampleWriter:
    """Appends samples to a JSONL file, one flushed and fsynced line each.

    The file is created by the first sample, so a run that fails before any item finished leaves
    no empty samples file behind.
    """

    def __init__(self, path: Path, stamp: str | None = None, complete: int | None = None) -> None:
        self._stamp = stamp
        self._path = path
        self.written: list[SampleResult] = []
        """The samples this writer appended, in order."""
        if complete is None:  # the caller did not read the file already
            _, complete = read_samples(path)
        if path.exists() and path.stat().st_size != complete:
            # Drop the partial line of a killed run before appending after it.
            with path.open("r+b") as handle:
                handle.truncate(complete)
        self._handle: IO[bytes] | None = None

    def write(self, sample: SampleResult) -> None:
        """Append one sample and make it durable."""
        if self._handle is None:
            self._handle = self._path.open("ab")
        self._handle.write(sample_line(sample, self._stamp))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.written.append(sample)

    def close(self) -> None:
        """Close the file (if a sample was written)."""
        if self._handle is not None:
            self._handle.close()

    def __enter__(self) -> SampleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_samples_atomic(path: Path, samples: Iterable[SampleResult], stamp: str | None = None) -> None:
    """Rewrite a samples file in one rename (used to put the final file in dataset order)."""
    write_bytes_atomic(path, (sample_line(sample, stamp) for sample in samples))


def _differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            out.append(f"{prefix}{key}: {old.get(key)!r} -> {new.get(key)!r}")
    return out


def check_manifest(out_dir: Path, section: str, value: Mapping[str, Any]) -> None:
    """Refuse to resume into ``out_dir`` when its manifest's ``section`` differs from ``value``."""
    path = out_dir / MANIFEST_NAME
    if not path.exists():
        check_held_manifest(out_dir, False, None, section, value)
        return
    check_held_manifest(out_dir, True, load_file(path), section, value)


def check_held_manifest(
    out_dir: Path, found: bool, manifest: Any, section: str, value: Mapping[str, Any]
) -> None:
    """:func:`check_manifest` of a manifest already read (``found``: whether run.json exists)."""
    path = out_dir / MANIFEST_NAME
    if not found:
        if (out_dir / SAMPLES_NAME).exists() or (out_dir / RESULTS_NAME).exists():
            raise MMSpuBenchError(
                f"{out_dir}: holds results but no {MANIFEST_NAME}; use another --out folder"
            )
        return
    old = manifest.get(section) if isinstance(manifest, dict) else None
    if not isinstance(old, dict):
        raise MMSpuBenchError(
            f"{path}: not a run manifest (field {section!r} is not an object); use another --out folder"
        )
    diffs = _differences(old, value, f"{section}.")
    if diffs:
        raise MMSpuBenchError(
            f"{out_dir}: holds a different run, refusing to resume into it ({'; '.join(diffs[:3])}); "
            "use another --out folder"
        )


def write_manifest(out_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Write ``run.json`` unless it exists (it was checked by ``check_manifest`` then)."""
    path = out_dir / MANIFEST_NAME
    if not path.exists():
        write_json_atomic(path, {"schema_version": SCHEMA_VERSION, **manifest})


def _ordered(samples: Sequence[SampleResult], ids: Sequence[str] | None) -> list[SampleResult]:
    by_id: dict[str, SampleResult] = {}
    for sample in samples:
        if sample.id in by_id and by_id[sample.id] != sample:
            raise MMSpuBenchError(f"samples: record {sample.id!r} appears twice with different contents")
        by_id[sample.id] = sample
    if ids is None:
        return [by_id[i] for i in sorted(by_id)]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise MMSpuBenchError(f"samples: {len(missing)} item(s) not evaluated, e.g. {missing[:3]}")
    return [by_id[i] for i in ids]


def recompute(
    samples: Sequence[SampleResult], config: RunConfig, ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """results.json's sections from per-item records: ``accuracy`` and ``cgla`` (``None`` when not
    run), then the section of every other view the run computes, in registry order
    (:mod:`mmspubench.eval.views`), then, in ``generate`` mode, ``replies``
    (:mod:`mmspubench.eval.replies.summary`).

    ``ids`` selects and orders the items (default: every sample, by id); the figures do not depend
    on the order in which items finished.
    """
    from mmspubench.eval.replies.summary import SECTION, replies_section

    ordered = _ordered(samples, ids)
    out: dict[str, Any] = {"accuracy": None, "cgla": None}
    for view in registry.in_run(config):
        if view.section is not None:
            out[view.name] = view.section(ordered, config)
    replies = replies_section(ordered) if config.answer_mode == "generate" else None
    if replies is not None:  # generate mode only: a logprob run's results.json is as before
        out[SECTION] = replies
    return out


def build_results(
    config: RunConfig,
    model: Mapping[str, Any],
    dataset: Mapping[str, Any],
    samples: Sequence[SampleResult],
    ids: Sequence[str],
    timing: Mapping[str, float],
    backend: Mapping[str, Any] | None = None,
    environment: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The full results.json object (docs/DESIGN.md, "Result files"); ``backend``: the engine's name,
    version and settings (``mmspubench.eval.backends.describe``); ``environment``: what produced
    the run (``mmspubench.eval.environment.describe``). The model's scorer fields are recomputed
    from the samples (``mmspubench.eval.scorer_check.summary``)."""
    from mmspubench.eval.replies.judge import judge_record
    from mmspubench.eval.replies.summary import SECTION
    from mmspubench.eval.scorer_check import summary

    aggregates = recompute(samples, config, ids)
    judge = judge_record(config)
    ordered = _ordered(samples, ids)
    accuracy, cgla = aggregates["accuracy"], aggregates["cgla"]
    built = Results.written(
        schema_version=SCHEMA_VERSION,
        benchmark=BENCHMARK,
        dataset=Dataset.from_json({**dataset, "split": config.split, "n": len(ids)}, "results"),
        model=Model.from_json({**model, **summary(ordered, model)}, "results"),
        config=config.to_json(),
        accuracy=None if accuracy is None else Accuracy.from_json(accuracy, "results"),
        cgla=None if cgla is None else Cgla.from_json(cgla, "results"),
        sections={
            **{k: v for k, v in aggregates.items() if k not in (*registry.paper(), SECTION)},
            **({} if judge is None else {"judge": judge}),
        },
        replies=aggregates.get(SECTION),
        timing=dict(timing),
        backend=None if backend is None else dict(backend),
        environment=None if environment is None else dict(environment),
        accuracy_only="cgla" not in config.metrics,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        package_version=package_version(),
    )
    return built.to_json()


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A finished run folder as read back by ``report``, ``submit`` and the Space."""

    results: Results
    """Parsed results.json."""
    samples: tuple[SampleResult, ...]
    """Parsed samples.jsonl, in file order."""
    config: RunConfig
    """The run's options (results.json ``config``)."""


def run_inputs(path: str | Path) -> list[Path]:
    """What a command reading the run ``path`` reads, for the output check of every command: the
    run folder given, or holding the results.json given (a folder with samples.jsonl or run.json
    beside it), else that file alone."""
    path = Path(path)
    if path.is_dir():
        return [path]
    if any((path.parent / name).exists() for name in (SAMPLES_NAME, MANIFEST_NAME)):
        return [path, path.parent]
    return [path]


def read_results(path: Path) -> dict[str, Any]:
    """Parse and check a results.json (:func:`~mmspubench.eval.results_file.read_results_file`), as
    the JSON object it holds, with a one-line error when it is not one."""
    return read_results_file(path).to_json()


def read_run(run_dir: str | Path) -> RunRecord:
    """Read a finished run folder: results.json and samples.jsonl."""
    folder = Path(run_dir)
    results = read_results_file(folder / RESULTS_NAME)
    samples, _ = read_samples(folder / SAMPLES_NAME)
    config = results.run_config(folder / RESULTS_NAME)
    return RunRecord(results=results, samples=tuple(samples), config=config)
