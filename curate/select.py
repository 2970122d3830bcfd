"""``curate select``: keep the images whose true class zero-shot CLIP ranks r with k < r <= l.

Images are streamed in batches (memory does not grow with the number of images). The run writes
into a staging folder beside ``--out`` (``.<name>.selecting``): after every batch the kept lines
are appended and flushed, then a small ``state.json`` records how far it got, so an interrupted
run resumes where it stopped. Bad input (a broken image, a bad label) deletes the staging folder:
nothing half-written remains. The finished folder is swapped into ``--out`` at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import MISSING, asdict, dataclass
from pathlib import Path
from typing import Any

from mmspubench.curate.clip import DEFAULT_CLIP, ZeroShotClip, load_clip, rank_rows
from mmspubench.curate.paths import check_out
from mmspubench.curate.sources import ImageSource, SourceItem, open_source
from mmspubench.dataset_builder.files import iter_lines_bounded
from mmspubench.dataset_builder.folders import swap_into
from mmspubench.dataset_builder.json_strict import load_file, loads_strict
from mmspubench.dataset_builder.raw import parse_source
from mmspubench.dataset_builder.schema import SOURCES
from mmspubench.errors import MMSpuBenchError
from mmspubench.options import option

CANDIDATES_FILE = "candidates.jsonl"
SELECTION_FILE = "selection.json"
STATE_FILE = "state.json"


@dataclass(frozen=True, slots=True)
class SelectConfig:
    """The parameters of one selection (written into ``selection.json``)."""

    data: str = option(MISSING, "ROOT/<class name>/*.jpg|png, a local dataset folder or a Hub id")
    """Class-folder root, local dataset folder or Hub dataset id."""
    source_name: str = option(MISSING, "the schema's source value, e.g. ObjectNet")
    """The schema's ``source`` value of every candidate (canonical spelling)."""
    clip: str = option(DEFAULT_CLIP, "CLIP model")
    """CLIP model (local folder or Hub id)."""
    k: int = option(3, "drop images CLIP ranks in its top k", arg_type=int)
    """Keep only images whose true class is not in CLIP's top ``k``."""
    l: int = option(20, "keep only images CLIP ranks in its top l", arg_type=int)  # noqa: E741 - the paper's name
    """... but is in CLIP's top ``l``."""
    prompt_template: str = option("a photo of a {}.", "class prompt ({} = class name)")
    """Text prompt per class; ``{}`` is the class name."""
    batch_size: int = option(32, "images per forward pass", arg_type=int)
    """Images per forward pass."""
    split: str = option("train", "dataset split (datasets only)")
    """Dataset split (datasets only)."""
    image_column: str = option("image", "image column (datasets only)")
    """Image column (datasets only)."""
    label_column: str = option("label", "ClassLabel or string label column (datasets only)")
    """Label column, ClassLabel or string (datasets only)."""
    device: str = option("cpu", "torch device of CLIP")
    """Torch device of CLIP."""


def check_config(config: SelectConfig) -> SelectConfig:
    """Validate the parameters; returns the config with the canonical source name."""
    if config.k < 0:
        raise MMSpuBenchError(f"--k {config.k}: expected 0 or more")
    if config.k >= config.l:
        raise MMSpuBenchError(f"--k {config.k} --l {config.l}: expected k < l (kept: k < rank <= l)")
    if config.batch_size < 1:
        raise MMSpuBenchError(f"--batch-size {config.batch_size}: expected a positive integer")
    if config.prompt_template.count("{}") != 1:
        raise MMSpuBenchError(
            f"--prompt-template {config.prompt_template!r}: expected exactly one '{{}}' for the class name"
        )
    try:
        source = parse_source("--source-name", "-", config.source_name)
    except MMSpuBenchError:
        raise MMSpuBenchError(
            f"--source-name {config.source_name!r}: unknown; expected one of {', '.join(SOURCES)}"
        ) from None
    return SelectConfig(**{**asdict(config), "source_name": source})


def run_select(config: SelectConfig, out: Path, *, overwrite: bool = False) -> dict[str, Any]:
    """Select candidates from ``config.data`` into ``out``; returns the ``selection.json`` content."""
    config = check_config(config)
    data = Path(config.data).expanduser()
    out = check_out(out, overwrite, {"--data": data} if data.exists() else {})
    source = open_source(
        config.data, split=config.split, image_column=config.image_column, label_column=config.label_column
    )
    stage = out.parent / f".{out.name}.selecting"
    params = {**asdict(config), "source": source.describe()}
    model, processor, revision = load_clip(config.clip, config.device)
    state = _resume_state(stage, params)
    clip = ZeroShotClip(model, processor, source.class_names, config.prompt_template)
    try:
        state = _stream(clip, source, config, stage, state)
    except MMSpuBenchError:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    summary = {
        "parameters": params,
        "model": {"id": config.clip, "revision": revision, "class": type(model).__name__},
        "classes": len(source.class_names),
        "seen": state["done"],
        "kept": state["kept"],
        "rank_histogram": {str(r): n for r, n in enumerate(state["hist"], start=1) if n},
        "seconds": round(state["seconds"], 3),
        "images_per_second": round(state["done"] / state["seconds"], 3) if state["seconds"] else None,
    }
    (stage / SELECTION_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (stage / STATE_FILE).unlink()
    _publish(stage, out)
    return summary


def _resume_state(stage: Path, params: dict[str, Any]) -> dict[str, Any]:
    state_path = stage / STATE_FILE
    if state_path.is_file():
        try:
            state: dict[str, Any] = load_file(state_path, _object)
        except MMSpuBenchError as err:
            raise MMSpuBenchError(f"{err}; delete {stage} to start over") from None
        if state.get("params") != params:
            raise MMSpuBenchError(
                f"{stage}: an interrupted selection with other parameters; delete it or rerun with the same ones"
            )
        with (stage / CANDIDATES_FILE).open("r+b") as fh:
            fh.truncate(state["bytes"])
        return state
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    (stage / CANDIDATES_FILE).write_bytes(b"")
    return {"params": params, "done": 0, "bytes": 0, "kept": 0, "hist": [], "seconds": 0.0}


def _stream(
    clip: ZeroShotClip, source: ImageSource, config: SelectConfig, stage: Path, state: dict[str, Any]
) -> dict[str, Any]:
    from tqdm.auto import tqdm

    items = source.items
    index = {name: i for i, name in enumerate(source.class_names)}
    hist = state["hist"] or [0] * len(source.class_names)
    with tqdm(total=len(items), initial=state["done"], unit="img", desc="select") as bar:
        for first in range(state["done"], len(items), config.batch_size):
            started = time.perf_counter()
            batch = items[first : first + config.batch_size]
            logits = clip.logits([source.load(item.ref) for item in batch])
            ranked = rank_rows(logits, [index[item.class_name] for item in batch], source.class_names)
            lines = []
            for item, result in zip(batch, ranked, strict=True):
                hist[result.true_rank - 1] += 1
                if config.k < result.true_rank <= config.l:
                    lines.append(_candidate_line(item, result, config.source_name))
            with (stage / CANDIDATES_FILE).open("ab") as fh:
                fh.write("".join(lines).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
                size = fh.tell()
            state = {
                **state,
                "done": first + len(batch),
                "bytes": size,
                "kept": state["kept"] + len(lines),
                "hist": hist,
                "seconds": state["seconds"] + time.perf_counter() - started,
            }
            _write_json_atomic(stage / STATE_FILE, state)
            bar.update(len(batch))
    return state


def _candidate_line(item: SourceItem, result: Any, source_name: str) -> str:
    record = {
        "id": f"{item.position:06d}",
        "image": item.ref,
        "class_name": item.class_name,
        "true_rank": result.true_rank,
        "above": [{"class_name": name, "prob": round(prob, 6)} for name, prob in result.above],
        "source": source_name,
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _publish(stage: Path, out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        swap_into(stage, out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"top level is {type(value).__name__}; expected a JSON object"


def read_candidates(cand: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(selection.json, candidates)`` of a folder written by ``curate select``, every line checked."""
    selection_path, lines_path = cand / SELECTION_FILE, cand / CANDIDATES_FILE
    for path in (selection_path, lines_path):
        if not path.is_file():
            raise MMSpuBenchError(
                f"{path}: not found; expected a folder written by `mmspubench curate select`"
            )
    selection = load_file(selection_path, _object)
    params = selection.get("parameters")
    source = params.get("source") if isinstance(params, dict) else None
    if not isinstance(source, dict) or source.get("kind") not in ("folder", "dataset"):
        raise MMSpuBenchError(
            f"{selection_path}: parameters.source missing or unknown; rerun `curate select`"
        )
    candidates: list[dict[str, Any]] = []
    lines: dict[str, int] = {}
    for number, line in iter_lines_bounded(lines_path, "candidates.jsonl"):
        if line.strip():
            where = f"{lines_path}: line {number}"
            candidate = loads_strict(line, where)
            problem = candidate_problem(candidate)
            if not problem and candidate["id"] in lines:
                problem = (
                    f"id {candidate['id']!r} already on line {lines[candidate['id']]}; ids must be unique"
                )
            if problem:
                raise MMSpuBenchError(f"{where}: {problem}")
            lines[candidate["id"]] = number
            candidates.append(candidate)
    return selection, candidates


_CANDIDATE_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "image": (str, int),
    "class_name": (str,),
    "true_rank": (int,),
    "above": (list,),
    "source": (str,),
}


def candidate_problem(candidate: Any) -> str | None:
    """Why a ``candidates.jsonl`` line is not a candidate ``select`` writes, or ``None``."""
    if not isinstance(candidate, dict):
        return f"a {type(candidate).__name__}; expected a JSON object"
    for key, types in _CANDIDATE_TYPES.items():
        value = candidate.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            return f"field {key!r}: expected {' or '.join(t.__name__ for t in types)}, got {value!r}"
    for above in candidate["above"]:
        if not (isinstance(above, dict) and isinstance(above.get("class_name"), str)):
            return f"field 'above': {above!r} is not an object with a 'class_name' string"
    return None
