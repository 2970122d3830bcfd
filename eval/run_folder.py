"""Checks and clean-up of a run folder (``--out``) around a run.

- :func:`check_out_dir` refuses, before any data or model is loaded, an ``--out`` that is a file,
  lies under a file, or cannot be created; the :class:`CheckedOut` it returns is trusted after.
- :func:`removed_if_unstarted` removes what a run wrote when it fails before its first item
  finished (``run.json``, timing files, the folder it created), so a bad model or option never
  leaves a run behind that a rerun would have to match.
- :func:`exclusive` holds a lock per process rank for the whole run, so a second ``eval`` into the
  same folder at the same time is refused instead of interleaving its samples with the first's.
- :func:`open_run` reads the folder's files once, where they enter a run, into an :class:`OpenedRun`
  that the resume checks, the plan and the merge use (no run file is read twice).
- :func:`unchanged_results` is the results.json of a finished run that a rerun leaves as it was;
  :func:`finished_without_loading` tells such a rerun from the folder before the model loads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.files import iter_lines_bounded
from mmspubench.dataset_builder.json_strict import load_file
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import MANIFEST_NAME, RESULTS_NAME, SAMPLES_NAME, read_results
from mmspubench.eval.run_stamp import model_identity

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig

_SAME_FIXED = ("schema_version", "benchmark", "dataset", "accuracy_only")
"""results.json keys beside the views' sections that a rerun of a finished run must reproduce
exactly to leave the file as it is (the views' sections: :func:`_same_figures`)."""


def _same_figures() -> tuple[str, ...]:
    """results.json keys a rerun of a finished run must reproduce exactly to leave the file as it is."""
    from mmspubench.eval.views.registry import VIEWS

    kept = (name for name, view in VIEWS.items() if view.section is not None and view.kept_on_rerun)
    return (*_SAME_FIXED, *kept)


@dataclass(frozen=True, slots=True)
class CheckedOut:
    """An ``--out`` folder :func:`check_out_dir` accepted: whoever holds one does not check it again."""

    path: Path
    """The run folder (it may not exist yet)."""


def check_out_dir(out: Path) -> CheckedOut:
    """Refuse an ``--out`` that is a file, lies under a file, or whose nearest folder is read-only."""
    if out.exists() and not out.is_dir():
        raise MMSpuBenchError(f"{out}: --out is a file; expected a run folder (new or to resume)")
    ancestor = out
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise MMSpuBenchError(f"{out}: --out lies under {ancestor}, which is a file; expected a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise MMSpuBenchError(f"{out}: cannot write into {ancestor} (permission denied); pick another --out")
    return CheckedOut(out)


@contextmanager
def exclusive(out_dir: Path, rank: int) -> Iterator[None]:
    """Hold ``out_dir/.lock.rank<rank>`` while the run writes; refuse if another run holds it.

    The processes of one multi-process launch have different ranks and share the folder; two runs
    launched separately both have rank 0. The lock file is removed when the run ends.
    """
    try:
        import fcntl
    except ImportError:  # no flock (Windows): no protection against a concurrent run
        yield
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f".lock.rank{rank}"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise MMSpuBenchError(
                f"{out_dir}: another eval is writing into this run folder right now; wait for it to "
                "end or use another --out folder"
            ) from None
        if path.exists() and os.stat(path).st_ino == os.fstat(fd).st_ino:
            break  # not a file the previous holder removed after we opened it
        os.close(fd)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def _samples_files(out_dir: Path) -> list[Path]:
    """The run's samples files: the merged one and the per-rank ones (nothing else of the folder)."""
    return [p for p in [out_dir / SAMPLES_NAME, *out_dir.glob("samples.rank*.jsonl")] if p.is_file()]


def _started(out_dir: Path) -> bool:
    """Whether any samples file of the folder holds a line (an item finished)."""
    return any(p.stat().st_size > 0 for p in _samples_files(out_dir))


@contextmanager
def removed_if_unstarted(out_dir: Path, is_main: bool) -> Iterator[None]:
    """On a failure before any item finished, remove what this run created in ``out_dir``."""
    fresh = not out_dir.exists()
    had_manifest = (out_dir / MANIFEST_NAME).exists()
    try:
        yield
    except BaseException:
        if is_main and not had_manifest and out_dir.is_dir() and not _started(out_dir):
            for path in [out_dir / MANIFEST_NAME, *out_dir.glob("timing.rank*.json")]:
                path.unlink(missing_ok=True)
            for path in _samples_files(out_dir):
                path.unlink(missing_ok=True)
            if fresh and not any(out_dir.iterdir()):
                out_dir.rmdir()
        raise


@dataclass(frozen=True, slots=True)
class SamplesFile:
    """One samples file of the folder as it was when the run opened it."""

    path: Path
    """samples.jsonl or a per-rank samples.rank<R>.jsonl."""
    lines: tuple[tuple[int, bytes], ...]
    """Its lines, numbered from 1, newline kept (a partial last line included)."""


@dataclass(frozen=True, slots=True)
class OpenedRun:
    """A run folder read once when a run enters it: what a resume checks, plans and merges from."""

    out_dir: Path
    """The run folder."""
    has_manifest: bool
    """Whether run.json exists."""
    manifest: Any
    """run.json parsed (``None`` when there is none)."""
    samples_files: tuple[SamplesFile, ...]
    """samples.jsonl, then the per-rank files, those that exist."""
    results: dict[str, Any] | None
    """results.json parsed, ``None`` when there is none or it is not one (the run then rewrites it)."""

    @property
    def manifest_config(self) -> Any:
        """run.json's ``config`` (``None`` when run.json is not an object)."""
        return self.manifest.get("config") if isinstance(self.manifest, dict) else None

    def complete_bytes(self, path: Path) -> int:
        """The byte length of the complete lines ``path`` held (0 when it did not exist)."""
        for file in self.samples_files:
            if file.path == path:
                return _complete(file.lines)
        return 0


def _complete(lines: Sequence[tuple[int, bytes]]) -> int:
    total = 0
    for _, line in lines:
        if not line.endswith(b"\n"):
            break
        total += len(line)
    return total


def open_run(out_dir: Path) -> OpenedRun:
    """Read run.json, every samples file and results.json of ``out_dir`` once (a missing folder is
    an empty run). A run.json that cannot be read is refused here, as the first check reading it did;
    a broken results.json is left for the run to rewrite."""
    manifest_path, results_path = out_dir / MANIFEST_NAME, out_dir / RESULTS_NAME
    has_manifest = manifest_path.exists()
    manifest = load_file(manifest_path) if has_manifest else None
    files = [out_dir / SAMPLES_NAME, *sorted(out_dir.glob("samples.rank*.jsonl"))]
    samples_files = tuple(
        SamplesFile(path, tuple(iter_lines_bounded(path, "a samples.jsonl file")))
        for path in files
        if path.exists()
    )
    try:
        results = read_results(results_path) if results_path.is_file() else None
    except MMSpuBenchError:
        results = None
    return OpenedRun(out_dir, has_manifest, manifest, samples_files, results)


def check_resume(opened: OpenedRun, config: RunConfig, dataset_info: Mapping[str, Any]) -> None:
    """Refuse to resume a folder whose run.json records other prompt variants, options or dataset
    (the model is checked once it is loaded)."""
    from mmspubench.eval import variants
    from mmspubench.eval.results import check_held_manifest

    out_dir = opened.out_dir
    if opened.has_manifest:
        variants.check_resume(
            out_dir, opened.manifest_config, config.prompt_variant, config.cgla_prompt_variant
        )
    for section, value in (("config", config.identity()), ("dataset", dataset_info)):
        check_held_manifest(out_dir, opened.has_manifest, opened.manifest, section, value)


def unchanged_results(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], identity: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The folder's results.json (``old``, as the run opened it) when it already holds exactly
    ``new``'s figures, else ``None``.

    ``identity``: the config fields that must match too (speed-only options may differ).
    """
    if old is None:
        return None
    if any(old.get(key) != new.get(key) for key in _same_figures()):
        return None
    raw = old.get("config")
    config: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if any(config.get(key) != value for key, value in identity.items()):
        return None
    model, new_model = old.get("model") or {}, new.get("model") or {}
    if not isinstance(model, dict) or model_identity(model) != model_identity(new_model):
        return None
    return dict(old)


def finished_note(out_dir: Path, kept: dict[str, Any]) -> str:
    """The note of a rerun of a finished run (its results.json left as it was)."""
    return (
        f"{out_dir}: this run was already finished (results.json of {kept.get('created_at')}); left unchanged"
    )


def finished_without_loading(
    opened: OpenedRun,
    ids: Sequence[str],
    config: RunConfig,
    dataset_info: dict[str, Any],
    world: int,
) -> dict[str, Any] | None:
    """A rerun of a finished run, told from the folder before the model loads: its results.json
    when the samples (all stamped by this config, dataset and the recorded model) cover every id
    and give exactly its figures again; else ``None`` (the run goes on as usual)."""
    from mmspubench.eval import results
    from mmspubench.eval.run_stamp import check_stamps, run_stamp

    old = opened.results
    if world != 1 or not opened.has_manifest or old is None:
        return None
    samples_files = opened.samples_files
    if any(f.path.name != results.SAMPLES_NAME for f in samples_files):
        return None
    try:
        model_identity = opened.manifest.get("model") if isinstance(opened.manifest, dict) else None
        if not isinstance(model_identity, dict) or not isinstance(old.get("model"), dict):
            return None
        stamp = run_stamp(config.identity(), dataset_info, model_identity)
        path = opened.out_dir / results.SAMPLES_NAME
        lines = samples_files[0].lines if samples_files else ()
        check_stamps(path, stamp, lines)
        by_id = {s.id: s for s in results.samples_of_lines(lines, path)[0]}
    except MMSpuBenchError:
        return None  # the usual path reports what is wrong, with the model loaded
    if any(i not in by_id for i in ids):
        return None
    scorer = {
        k: old["model"][k]
        for k in ("scorer_used", "scorer_fallback_reason", "scorer_check")
        if k in old["model"]
    }
    out = results.build_results(
        config,
        {**model_identity, **scorer},
        dataset_info,
        [by_id[i] for i in ids],
        list(ids),
        dict(old.get("timing") or {}),
        old.get("backend"),
        old.get("environment"),
    )
    return unchanged_results(old, out, config.identity())
