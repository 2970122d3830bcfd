"""SWEEP.yaml: read, validate in full, expand into one planned run per (model, variant).

Every run's options go through eval's own check (``eval.config.with_options``), and each run's
command line is parsed back by eval's own parser and must give the same config, so a sweep run is
exactly the ``mmspubench eval`` command it prints. Nothing runs before the whole file is valid.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig, with_options
from mmspubench.sweep.argv import eval_argv, parsed_config
from mmspubench.sweep.spec_yaml import load_yaml

TOP_KEYS = ("root", "dataset", "dataset_revision", "split", "metrics", "variants", "options", "models")
"""Keys of SWEEP.yaml besides the launchers' own sections (``slurm:``, ``hf_jobs:``)."""
MODEL_KEYS = ("name", "model", "thinking", "options")
"""Keys of a ``models:`` entry; ``thinking:`` is the model's ``--thinking`` (as ``options.thinking``)."""
SWEEP_OWNED = ("out", "model", "prompt_variant", "dataset", "dataset_revision", "split", "metrics")
"""Options a model's ``options`` may not set: the sweep sets them for every run."""
MAX_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """One run of the sweep: a run folder under the root, written by one ``mmspubench eval``."""

    name: str
    """Run folder name, ``<model name>--<variant>``."""
    model_name: str
    """The model entry's name (``name:`` or derived from ``model:``)."""
    variant: str
    """Prompt variant of this run."""
    folder: Path
    """The run folder (``root/name``)."""
    options: Mapping[str, Any]
    """The eval options of the run (without ``out``), as validated."""
    config: RunConfig
    """The run's config, ``out`` included."""
    argv: tuple[str, ...]
    """``mmspubench eval`` arguments that reproduce ``config`` (``--out`` last)."""


@dataclass(frozen=True, slots=True)
class Sweep:
    """A validated SWEEP.yaml."""

    path: Path
    """The SWEEP.yaml file."""
    root: Path
    """Output root (relative paths are taken from the SWEEP.yaml folder)."""
    runs: tuple[PlannedRun, ...]
    """Every run, model by model, variant by variant."""
    sections: Mapping[str, Mapping[str, Any]]
    """The launchers' sections as written (``slurm``, ``hf_jobs``), checked by their launcher."""


def _where(path: Path, entry: str) -> str:
    return f"{path}: {entry}"


def _load(path: Path) -> dict[str, Any]:
    from mmspubench.dataset_builder.files import open_regular

    with open_regular(path, MAX_BYTES, "a SWEEP.yaml file") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MMSpuBenchError(f"{path}: byte {err.start}: not UTF-8 text; expected a YAML file") from None
    obj = load_yaml(path, text)
    if not isinstance(obj, dict):
        raise MMSpuBenchError(f"{path}: expected a mapping with keys {', '.join(TOP_KEYS)}")
    return obj


def _check_keys(obj: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = [str(k) for k in obj if k not in allowed]
    if unknown:
        raise MMSpuBenchError(f"{where}: unknown key {unknown[0]!r}; expected some of {', '.join(allowed)}")


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise MMSpuBenchError(f"{where}: expected a mapping of option names to values")
    return {k.replace("-", "_"): v for k, v in value.items()}


def _texts(value: Any, where: str, default: Sequence[str] | None) -> list[str]:
    if value is None and default is not None:
        return list(default)
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise MMSpuBenchError(f"{where}: expected a non-empty list of names")
    if len(set(value)) != len(value):
        twice = next(v for v in value if value.count(v) > 1)
        raise MMSpuBenchError(f"{where}: {twice!r} is listed twice (a duplicated run)")
    return list(value)


MAX_NAME = 100
"""Longest model name in a run folder's name (a longer one is cut and given a digest: still unique)."""


def _is_path(model: str) -> bool:
    """A folder (existing or not: ``./x``, ``/a/b``, ``a/b/c``), not a Hub id ``org/name``."""
    if model.startswith(("/", "./", "../", "~")) or model.count("/") > 1:
        return True
    try:
        return Path(model).exists()
    except OSError:  # a name too long for the file system is no folder
        return False


def model_name(entry: Mapping[str, Any]) -> str:
    """An entry's name: ``name:`` or the model's folder name / Hub id with ``/`` as ``__``; only
    letters, digits, ``_.-`` (a safe folder name), at most :data:`MAX_NAME` characters."""
    given = entry.get("name")
    model = str(entry.get("model"))
    text = str(given) if given is not None else (Path(model).name if _is_path(model) else model)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.replace("/", "__")).strip(".-") or "model"
    if len(name) > MAX_NAME:
        name = f"{name[: MAX_NAME - 9]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    return name


def _local(path: Path, value: str) -> str:
    """A relative folder that exists beside SWEEP.yaml, made absolute; anything else as given."""
    if not Path(value).is_absolute() and (path.parent / value).exists():
        return str((path.parent / value).resolve())
    return value


def _common(obj: Mapping[str, Any], path: Path) -> dict[str, Any]:
    common = _mapping(obj.get("options"), _where(path, "options"))
    owned = [k for k in common if k in SWEEP_OWNED]
    if owned:
        raise MMSpuBenchError(_where(path, f"options: {owned[0]!r} is a key of SWEEP.yaml itself"))
    for key in ("dataset", "dataset_revision", "split"):
        if obj.get(key) is not None:
            common[key] = obj[key]
    if isinstance(common.get("dataset"), str):
        common["dataset"] = _local(path, common["dataset"])
    if isinstance(common.get("thinking"), bool):  # YAML 1.1 reads the words on and off as booleans
        common["thinking"] = "on" if common["thinking"] else "off"
    return common


def _check_interventions(options: Mapping[str, Any], where: str) -> None:
    """An ``interventions`` key written empty is refused: eval reads an empty list as every built-in
    one, which a sweep file leaving the key out already says (an empty value is a slip, not a choice)."""
    value = options.get("interventions", ...)
    if value is None or (isinstance(value, (str, list)) and not "".join(map(str, value)).strip()):
        raise MMSpuBenchError(
            f"{where}: option 'interventions' is empty; name some (grayscale, blur, cf:NAME, cf:*) "
            "or leave the key out for every built-in one"
        )


def _entry_runs(
    path: Path,
    root: Path,
    index: int,
    entry: Any,
    common: Mapping[str, Any],
    variants: Sequence[str],
    metrics: Sequence[str] | None,
) -> list[PlannedRun]:
    label = f"models[{index}]"
    if not isinstance(entry, dict):
        raise MMSpuBenchError(_where(path, f"{label}: expected a mapping with keys {', '.join(MODEL_KEYS)}"))
    _check_keys(entry, MODEL_KEYS, _where(path, label))
    if not isinstance(entry.get("model"), str) or not entry["model"].strip():
        raise MMSpuBenchError(_where(path, f"{label}: field 'model': expected a Hub id or a folder"))
    if "name" in entry and (not isinstance(entry["name"], str) or not entry["name"].strip()):
        raise MMSpuBenchError(
            _where(
                path, f"{label}: field 'name': expected a text naming the run folders, got {entry['name']!r}"
            )
        )
    model = _local(path, entry["model"])
    name = model_name({**entry, "model": model})
    label = f"{label} ({name})"
    own = _mapping(entry.get("options"), _where(path, f"{label}: options"))
    owned = [k for k in own if k in SWEEP_OWNED]
    if owned:
        raise MMSpuBenchError(
            _where(path, f"{label}: options: {owned[0]!r} is set by the sweep, not per model")
        )
    if "thinking" in entry:
        if "thinking" in own:
            raise MMSpuBenchError(_where(path, f"{label}: 'thinking' is given twice (also in its options)"))
        own["thinking"] = entry["thinking"]
    if isinstance(own.get("thinking"), bool):  # YAML 1.1 reads the words on and off as booleans
        own["thinking"] = "on" if own["thinking"] else "off"
    _check_interventions({**common, **own}, _where(path, label))
    runs = []
    for variant in variants:
        options = {**common, **own, "model": model, "prompt_variant": variant}
        if metrics is not None:
            options["metrics"] = ",".join(metrics)
        folder = root / f"{name}--{variant}"
        try:
            config = with_options(None, {**options, "out": str(folder)})
            argv = eval_argv(config)
            if parsed_config(argv) != config:
                raise MMSpuBenchError("its options cannot be written as one eval command line")
        except MMSpuBenchError as err:
            raise MMSpuBenchError(_where(path, f"{label}: variant {variant!r}: {err}")) from None
        runs.append(PlannedRun(folder.name, name, variant, folder, options, config, argv))
    return runs


def _check_unique(path: Path, runs: Sequence[PlannedRun]) -> None:
    seen: dict[str, PlannedRun] = {}
    for run in runs:
        key = repr(sorted(run.config.identity().items())) + str(run.config.model)
        same = next((r for r in seen.values() if r.name == run.name), None) or seen.get(key)
        if same is not None:
            raise MMSpuBenchError(
                _where(path, f"models ({run.model_name}): run {run.name!r} duplicates run {same.name!r}")
            )
        seen[key] = run


def _check_outputs(path: Path, root: Path, runs: Sequence[PlannedRun]) -> None:
    """The root is not inside what the runs read (a model or dataset folder, the file itself), and
    no run folder (replaced whole by a fetched job) is or holds one."""
    from mmspubench.outputs import refuse_overlap

    inputs = {path}
    for run in runs:
        for value in (run.options.get("model"), run.options.get("dataset")):
            if isinstance(value, str) and Path(value).exists():  # a folder, not a Hub id
                inputs.add(Path(value).absolute())
    refuse_overlap(f"{path}: root", root, sorted(inputs))
    for run in runs:
        refuse_overlap(f"{path}: run folder", run.folder, sorted(inputs), folder=True)


def load_sweep(path: str | Path, section_keys: Sequence[str]) -> Sweep:
    """Read and validate SWEEP.yaml in full (one line naming the entry on the first problem)."""
    file = Path(path)
    obj = _load(file)
    _check_keys(obj, (*TOP_KEYS, *section_keys), str(file))
    if not isinstance(obj.get("root"), str) or not obj["root"]:
        raise MMSpuBenchError(_where(file, "field 'root': expected the output folder of the sweep"))
    root = Path(os.path.normpath((file.parent / obj["root"]).absolute()))  # `a/..` is not a folder name
    variants = _texts(obj.get("variants"), _where(file, "variants"), ("standard",))
    metrics = None if obj.get("metrics") is None else _texts(obj["metrics"], _where(file, "metrics"), None)
    common = _common(obj, file)
    models = obj.get("models")
    if not isinstance(models, list) or not models:
        raise MMSpuBenchError(_where(file, "models: expected a non-empty list of {model, name, options}"))
    runs = [r for i, m in enumerate(models) for r in _entry_runs(file, root, i, m, common, variants, metrics)]
    _check_unique(file, runs)
    _check_outputs(file, root, runs)
    sections = {k: _mapping(obj[k], _where(file, k)) for k in section_keys if k in obj}
    return Sweep(file, root, tuple(runs), sections)
