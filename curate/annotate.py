"""``curate annotate``: one structured request per candidate -> a draft raw release.

Each answer is parsed as JSON, composed into a raw record (options: the true class and the three
classes CLIP ranked highest above it, the answer's letter balanced over A-D with a seed) and
checked by the validators ``build`` uses (:func:`mmspubench.dataset_builder.raw.validate_entry`,
:func:`mmspubench.dataset_builder.images.check_image`) and by the response schema's own bounds
(lengths, characters, counts: a server that ignores the schema cannot slip in a 100,000-character
question). An invalid answer is retried; after the last attempt the candidate is recorded as
failed with the reason in ``provenance.jsonl``: never filled in. A candidate whose image cannot be
read or stored (changed since ``select``, not PNG or JPEG) is failed the same way, without a model
request; the other candidates go on. The draft is written beside ``--out`` and swapped into place
when complete, with a random ``draft_id`` in ``annotate.json`` (see ``draft_identity``).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import MISSING, asdict, dataclass, field
from pathlib import Path
from typing import Any

from mmspubench.curate import prompts
from mmspubench.curate.backends import BACKENDS, Annotator, Request, open_annotator
from mmspubench.curate.draft_identity import RUN_FILE, new_draft_id
from mmspubench.curate.paths import check_out
from mmspubench.curate.select import read_candidates
from mmspubench.curate.sources import ImageSource, reopen_source
from mmspubench.dataset_builder.folders import replace_folder
from mmspubench.dataset_builder.images import check_image
from mmspubench.dataset_builder.json_strict import loads_strict
from mmspubench.dataset_builder.raw import ANNOTATION_FILE, IMAGES_DIR, RawEntry, validate_entry
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, NUM_OPTIONS
from mmspubench.dataset_builder.staging import check_out_vs_source
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.backends.api_key import DEFAULT_KEY_ENV
from mmspubench.options import option

PROVENANCE_FILE = "provenance.jsonl"
DISTRACTORS = NUM_OPTIONS - 1
CHUNK = 32
"""Candidates per round of requests: their images are the only ones held in memory."""
MAX_RAW_KEPT = 20_000
"""Longest raw answer written into provenance (a longer one is cut, its length recorded)."""


@dataclass(frozen=True, slots=True)
class AnnotateConfig:
    """How to annotate (recorded in provenance)."""

    backend: str = option(MISSING, "the annotator's engine", choices=BACKENDS)
    """``transformers``, ``vllm`` or ``openai`` (:data:`mmspubench.curate.backends.BACKENDS`)."""
    model: str = option(MISSING, "model id or folder (the served name for openai)")
    """Model id or folder; the served name for ``openai``."""
    base_url: str | None = option(None, "OpenAI-compatible server URL (openai backend)")
    """Server URL of the ``openai`` backend."""
    api_key_env: str = option(
        DEFAULT_KEY_ENV,
        "openai: NAME of the env var holding the API key, or none for a server that needs no key",
    )
    """Name of the environment variable holding the key (never the key itself)."""
    attempts: int = option(3, "tries per candidate before it is failed", arg_type=int)
    """Tries per candidate before it is failed."""
    seed: int = option(0, "seed of the answer-letter balance", arg_type=int)
    """Seed of the answer-letter balance."""
    max_new_tokens: int = option(768, "generation budget per request", arg_type=int)
    """Generation budget per request."""
    device: str = option("cpu", "torch device (transformers backend)")
    """Torch device of the ``transformers`` backend."""


@dataclass(frozen=True, slots=True)
class AnnotateResult:
    """Counts of one run."""

    total: int
    ok: int
    failed: int
    failures: tuple[tuple[str, str], ...] = ()
    """``(candidate id, reason)`` of every failed candidate, in candidate order."""


@dataclass(slots=True)
class _Job:
    candidate: dict[str, Any]
    letter: str
    user: str | None
    """The user text, or ``None`` when the candidate cannot become an item (reason set)."""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] | None = None
    reason: str | None = None


def balanced_letters(n: int, seed: int) -> list[str]:
    """``n`` answer letters, each of A-D used ``n // 4`` or ``n // 4 + 1`` times, shuffled by ``seed``."""
    letters = [ANSWER_LETTERS[i % NUM_OPTIONS] for i in range(n)]
    random.Random(seed).shuffle(letters)
    return letters


def compose_options(class_name: str, above: list[str], letter: str) -> list[str]:
    """The true class at ``letter``, the three highest-ranked wrong classes in the other places (in rank order)."""
    options = list(above[:DISTRACTORS])
    options.insert(ANSWER_LETTERS.index(letter), class_name)
    return options


def run_annotate(cand: Path, config: AnnotateConfig, out: Path, *, overwrite: bool = False) -> AnnotateResult:
    """Annotate every candidate of ``cand`` into the draft folder ``out``."""
    if config.attempts < 1:
        raise MMSpuBenchError(f"--attempts {config.attempts}: expected a positive integer")
    out = check_out(out, overwrite, {"--candidates": Path(cand)})
    selection, candidates = read_candidates(Path(cand))
    if not candidates:
        raise MMSpuBenchError(f"{cand}/candidates.jsonl: no candidates to annotate")
    described = selection["parameters"]["source"]
    if described["kind"] == "folder":
        check_out_vs_source(Path(described["path"]), out, "--data of the selection")
    source = reopen_source(described)
    check_refs(Path(cand), candidates, source)
    annotator = open_annotator(
        config.backend,
        config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        device=config.device,
        max_new_tokens=config.max_new_tokens,
        seed=config.seed,
    )
    letters = balanced_letters(len(candidates), config.seed)
    jobs = [_job(c, letter) for c, letter in zip(candidates, letters, strict=True)]
    try:
        return replace_folder(out, lambda folder: _fill(folder, jobs, annotator, config, source))
    finally:
        close = getattr(annotator, "close", None)  # the vLLM engine's processes stop here, not at exit
        if close is not None:
            close()


def check_refs(cand: Path, candidates: list[dict[str, Any]], source: ImageSource) -> None:
    """Every candidate names an image of the source it was selected from (nothing outside it)."""
    refs = {(item.ref, item.class_name) for item in source.items}
    for candidate in candidates:
        if (candidate["image"], candidate["class_name"]) not in refs:
            raise MMSpuBenchError(
                f"{cand / 'candidates.jsonl'}: candidate {candidate['id']!r}: image {candidate['image']!r} "
                f"of class {candidate['class_name']!r} is not in the source {source.describe()['path']}"
            )


def _job(candidate: dict[str, Any], letter: str) -> _Job:
    above = [a["class_name"] for a in candidate["above"]]
    if len(above) < DISTRACTORS:
        job = _Job(candidate, letter, None)
        job.reason = (
            f"only {len(above)} classes ranked above the truth; {DISTRACTORS} are needed as options "
            "(select with --k >= 3)"
        )
        return job
    return _Job(candidate, letter, prompts.user_text(candidate["class_name"], above))


def _fill(
    folder: Path, jobs: list[_Job], annotator: Annotator, config: AnnotateConfig, source: ImageSource
) -> AnnotateResult:
    from tqdm.auto import tqdm

    (folder / IMAGES_DIR).mkdir(parents=True)
    with tqdm(total=len(jobs), unit="item", desc="annotate") as bar:
        for start in range(0, len(jobs), CHUNK):
            chunk = jobs[start : start + CHUNK]
            _annotate_chunk(folder, chunk, annotator, config, source)
            bar.update(len(chunk))
    records = [j.record for j in jobs if j.record is not None]
    if not records:
        failed = next(j for j in jobs if j.reason)
        raise MMSpuBenchError(
            f"no candidate gave a valid item after {config.attempts} attempts; "
            f"first failure: candidate {failed.candidate['id']!r}: {failed.reason}"
        )
    (folder / ANNOTATION_FILE).write_text(
        json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    run_info = {
        "draft_id": new_draft_id(),
        "config": asdict(config),
        "annotator": annotator.info,
        "prompts": prompts.prompt_spec(),
    }
    (folder / RUN_FILE).write_text(json.dumps(run_info, indent=2) + "\n", encoding="utf-8")
    with (folder / PROVENANCE_FILE).open("w", encoding="utf-8") as fh:
        for job in jobs:
            fh.write(json.dumps(_provenance(job, annotator, config), ensure_ascii=False) + "\n")
    failures = tuple((j.candidate["id"], str(j.reason)) for j in jobs if j.record is None)
    return AnnotateResult(len(jobs), len(records), len(failures), failures)


def _annotate_chunk(
    folder: Path, chunk: list[_Job], annotator: Annotator, config: AnnotateConfig, source: ImageSource
) -> None:
    """All attempts for one chunk of candidates; only this chunk's images are held in memory."""
    requests = {}
    for job in chunk:
        if job.user is not None:
            try:
                requests[id(job)] = Request(source.load(job.candidate["image"]), prompts.SYSTEM, job.user)
            except MMSpuBenchError as err:
                job.reason = f"image: {err}"
    schema = prompts.response_schema()
    for attempt in range(config.attempts):
        pending = [j for j in chunk if id(j) in requests and j.record is None]
        if not pending:
            return
        started = time.perf_counter()
        raws = annotator.answer([requests[id(j)] for j in pending], schema, attempt)
        seconds = round((time.perf_counter() - started) / len(pending), 3)
        for job, raw in zip(pending, raws, strict=True):
            error = _accept(folder, job, raw, source)
            job.attempts.append(
                {"attempt": attempt + 1, **_kept_raw(raw), "error": error, "seconds": seconds}
            )
            job.reason = error


def _kept_raw(raw: object) -> dict[str, Any]:
    """The raw answer as provenance keeps it: whole up to ``MAX_RAW_KEPT`` characters."""
    if isinstance(raw, str) and len(raw) > MAX_RAW_KEPT:
        return {"raw": raw[:MAX_RAW_KEPT], "raw_chars": len(raw)}
    return {"raw": raw}


def _accept(folder: Path, job: _Job, raw: str, source: ImageSource) -> str | None:
    """Parse, compose and validate one answer; on success store the record and the image."""
    cand = job.candidate
    if not isinstance(raw, str):
        return f"answer is {type(raw).__name__}; expected JSON text"
    try:
        answer = loads_strict(raw, "answer")
    except MMSpuBenchError as err:
        return str(err)
    if not isinstance(answer, dict):
        return f"answer is {type(answer).__name__}; expected a JSON object"
    above = [a["class_name"] for a in cand["above"]]
    record = {
        "id": cand["id"],
        "image": None,
        "question": answer.get("question"),
        "options": compose_options(cand["class_name"], above, job.letter),
        "answer": job.letter,
        "class_name": cand["class_name"],
        "core_attributes": answer.get("core_attributes"),
        "spurious_attributes": answer.get("spurious_attributes"),
        "spurious_types": answer.get("spurious_types"),
        "source": cand["source"],
    }
    record["image"] = _image_name(cand)
    target = folder / record["image"]
    try:
        validate_entry(RawEntry(id=cand["id"], fields=record, file="model answer"), target)
    except MMSpuBenchError as err:
        return str(err)
    problem = prompts.answer_problem(answer)
    if problem is not None:
        return f"model answer: {problem}"
    try:
        _save_image(source, cand["image"], target)
        check_image(target, ANNOTATION_FILE, cand["id"])
    except (MMSpuBenchError, OSError) as err:
        target.unlink(missing_ok=True)
        return f"image: {err}"
    job.record = record
    return None


def _image_name(cand: dict[str, Any]) -> str:
    ref = cand["image"]
    suffix = Path(ref).suffix.lower() if isinstance(ref, str) else ".png"
    suffix = ".jpg" if suffix == ".jpeg" else suffix
    return (IMAGES_DIR / f"{cand['id']}{suffix}").as_posix()


def _save_image(source: ImageSource, ref: str | int, target: Path) -> None:
    """The original file's bytes for a folder source; a PNG of the decoded image for a dataset."""
    described = source.describe()
    if described["kind"] == "folder":
        shutil.copyfile(Path(described["path"]) / str(ref), target)
    else:
        source.load(ref).save(target, format="PNG")


def _provenance(job: _Job, annotator: Annotator, config: AnnotateConfig) -> dict[str, Any]:
    cand = job.candidate
    return {
        "id": cand["id"],
        "status": "ok" if job.record is not None else "failed",
        "reason": None if job.record is not None else job.reason,
        "prompt_version": prompts.PROMPT_VERSION,
        "user_text": job.user,
        "annotator": annotator.info,
        "answer_letter": job.letter,
        "candidate": {k: cand[k] for k in ("image", "true_rank", "above", "source")},
        "attempts": job.attempts,
        "seed": config.seed,
    }
