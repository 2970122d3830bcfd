"""Refuse an ``eval.yaml`` that the Hub or inspect-ai's Hub task loader would reject, before a push.

inspect-ai (``inspect_ai/_eval/task/hf.py``) validates every task of ``eval.yaml`` before it
filters by id, so one bad task breaks them all. The checks here run whether or not inspect-ai is
installed: the framework is ``inspect-ai``; every task has only the keys inspect-ai's ``HFTask``
allows, one of its fixed solver and scorer names, an id when there are several tasks, and a config
and split that the folder holds; every column its ``field_spec`` names is in that config's
Parquet schema, the image column holding ``data:image/`` strings. When inspect-ai is importable,
its own ``HFTask`` model validates each task as well (the test suite installs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from mmspubench.dataset_builder.eval_yaml import EVALUATION_FRAMEWORK
from mmspubench.errors import MMSpuBenchError

TASK_KEYS = frozenset(
    {
        "id",
        "config",
        "split",
        "field_spec",
        "shuffle_choices",
        "epochs",
        "epoch_reducer",
        "solvers",
        "scorers",
    }
)
"""The keys inspect-ai's ``HFTask`` accepts (it forbids any other)."""
SOLVERS = frozenset(
    {
        "prompt_template",
        "system_message",
        "user_message",
        "chain_of_thought",
        "use_tools",
        "generate",
        "self_critique",
        "multiple_choice",
    }
)
"""inspect-ai 0.3.285's fixed solver names for Hub tasks."""
SCORERS = frozenset(
    {
        "includes",
        "match",
        "pattern",
        "answer",
        "exact",
        "f1",
        "model_graded_qa",
        "model_graded_fact",
        "choice",
        "math",
    }
)
"""inspect-ai 0.3.285's fixed scorer names for Hub tasks."""
_COLUMN_KEYS = ("input", "input_image", "target", "choices")


def check_eval_yaml(repo_dir: Path) -> None:
    """Raise ``MMSpuBenchError`` naming the first problem of ``repo_dir/eval.yaml``."""
    path = repo_dir / "eval.yaml"
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise MMSpuBenchError(f"{path}: cannot read eval.yaml ({type(err).__name__})") from None
    if not isinstance(spec, Mapping):
        raise MMSpuBenchError(f"{path}: expected a mapping with name, evaluation_framework and tasks")
    if spec.get("evaluation_framework") != EVALUATION_FRAMEWORK:
        raise MMSpuBenchError(
            f"{path}: field 'evaluation_framework': {spec.get('evaluation_framework')!r}; expected "
            f"{EVALUATION_FRAMEWORK!r} (its tasks are inspect-ai Hub tasks)"
        )
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise MMSpuBenchError(f"{path}: field 'tasks': expected a non-empty list")
    configs = _card_configs(repo_dir)
    for number, task in enumerate(tasks):
        where = f"{path}: task {number} ({task.get('id') if isinstance(task, Mapping) else task!r})"
        _check_task(task, where, multiple=len(tasks) > 1)
        _check_columns(repo_dir, configs, task, where)
        _inspect_validates(task, where)


def _check_task(task: Any, where: str, *, multiple: bool) -> None:
    if not isinstance(task, Mapping):
        raise MMSpuBenchError(f"{where}: expected a mapping")
    extra = sorted(set(task) - TASK_KEYS)
    if extra:
        raise MMSpuBenchError(
            f"{where}: key(s) {', '.join(extra)} not allowed by inspect-ai; allowed: {sorted(TASK_KEYS)}"
        )
    if multiple and not task.get("id"):
        raise MMSpuBenchError(f"{where}: field 'id' is required when eval.yaml has several tasks")
    for key, names in (("solvers", SOLVERS), ("scorers", SCORERS)):
        entries = task.get(key)
        if not isinstance(entries, list) or not entries:
            raise MMSpuBenchError(f"{where}: field {key!r}: expected a non-empty list")
        for entry in entries:
            name = entry.get("name") if isinstance(entry, Mapping) else None
            if name not in names:
                raise MMSpuBenchError(
                    f"{where}: field {key!r}: {name!r} is not one of inspect-ai's {sorted(names)}"
                )
    if not isinstance(task.get("field_spec"), Mapping):
        raise MMSpuBenchError(f"{where}: field 'field_spec': expected a mapping of column names")


def _card_configs(repo_dir: Path) -> dict[str, dict[str, str]]:
    """Config name -> split -> data file pattern, from the card's ``configs``."""
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(repo_dir / "README.md")
    found: dict[str, dict[str, str]] = {}
    for config in card.data.get("configs") or []:
        files = config.get("data_files") or []
        found[str(config.get("config_name"))] = {str(f["split"]): str(f["path"]) for f in files}
    return found


def _check_columns(
    repo_dir: Path, configs: dict[str, dict[str, str]], task: Mapping[str, Any], where: str
) -> None:
    import pyarrow.parquet as pq

    config, split = str(task.get("config", "default")), str(task.get("split", "test"))
    pattern = configs.get(config, {}).get(split)
    files = sorted(repo_dir.glob(pattern)) if pattern else []
    if not files:
        raise MMSpuBenchError(f"{where}: config {config!r} split {split!r}: no data files in {repo_dir}")
    spec = task["field_spec"]
    names = [
        spec[k] for k in _COLUMN_KEYS if isinstance(spec.get(k), str) and not spec[k].startswith("literal:")
    ]
    names += list(spec.get("metadata") or [])
    table = pq.read_table(files[0])
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise MMSpuBenchError(f"{where}: field_spec column(s) {', '.join(missing)} not in config {config!r}")
    image = spec.get("input_image")
    if image:
        values = table.column(image).to_pylist()[:1]
        if not values or not isinstance(values[0], str) or not values[0].startswith("data:image/"):
            raise MMSpuBenchError(
                f"{where}: column {image!r} of config {config!r} must hold data:image/...;base64, strings "
                "(inspect-ai takes only string images)"
            )


def _inspect_validates(task: Mapping[str, Any], where: str) -> None:
    try:
        from inspect_ai._eval.task.hf import HFTask
        from pydantic import ValidationError
    except ImportError:
        return  # the checks above stand in for it; pip install 'mm-spubench[inspect]' adds it
    try:
        HFTask.model_validate(dict(task))
    except ValidationError as err:
        first = err.errors()[0]
        raise MMSpuBenchError(
            f"{where}: inspect-ai rejects it: {'.'.join(map(str, first['loc']))}: {first['msg']}"
        ) from None
