"""The lmms-eval task folder ``mm_spubench/`` (package data; ``mmspubench integrations lmms-eval`` prints it).

The shipped task reads the published dataset from the Hub (``dataset_path`` in its YAML).
:func:`write_task_copy` (``mmspubench integrations lmms-eval --dataset DIR --out TASK``) writes a
copy of the folder whose ``dataset_path`` is another Hub id or a local built folder (made by
``mmspubench build``), for an offline machine or a dataset of your own. The intervention tasks
(:data:`INTERVENTION_TASKS`) include ``mm_spubench.yaml``, so they read the copy's dataset too.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.interventions import INTERVENTIONS

TASK_DIR = Path(__file__).resolve().parent / "mm_spubench"
"""The folder to pass as ``lmms-eval --include_path``."""
INTERVENTION_TASKS = tuple(f"mm_spubench_{name}" for name in INTERVENTIONS)
"""A task per built-in intervention (``mm_spubench_grayscale``...; tag ``mm_spubench_interventions``):
``mm_spubench`` with the image transformed; each YAML includes ``mm_spubench.yaml`` (its dataset)."""
YAML_FILES = ("mm_spubench.yaml", "mm_spubench_circular.yaml")
"""The YAMLs that name the dataset: ``mm_spubench`` and its circular variant ``mm_spubench_circular``."""
TASK_FILES = (*YAML_FILES, *(f"{task}.yaml" for task in INTERVENTION_TASKS), "utils.py")
"""The files of the task folder."""
_DATASET_LINE = re.compile(r"^dataset_path: .*$", re.MULTILINE)


def task_yaml(dataset: str, name: str = "mm_spubench.yaml") -> str:
    """A task's YAML with ``dataset_path`` set to ``dataset`` (quoted: any path is one YAML string)."""
    text = (TASK_DIR / name).read_text(encoding="utf-8")
    replaced, count = _DATASET_LINE.subn(lambda _: f"dataset_path: {json.dumps(dataset)}", text, count=1)
    if count != 1:
        raise MMSpuBenchError(f"{TASK_DIR / name}: no dataset_path line")
    return replaced


def write_task_copy(dataset: str, out: Path) -> Path:
    """A copy of the task folder at ``out`` (new or empty) reading ``dataset``: a Hub id, or a local
    folder (written as its absolute path, so lmms-eval finds it from any working folder)."""
    from mmspubench.dataset_builder.hub import is_hub_id

    local = Path(dataset).expanduser()
    if local.exists():
        if not local.is_dir():
            raise MMSpuBenchError(f"--dataset {dataset}: not a folder (a built dataset folder or a Hub id)")
        dataset = str(local.resolve())
    elif not is_hub_id(dataset):
        raise MMSpuBenchError(f"--dataset {dataset}: no such folder, and not a Hub id (org/name)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MMSpuBenchError(f"--out {out}: exists and is not an empty folder")
    texts = {name: task_yaml(dataset, name) for name in YAML_FILES}
    out.mkdir(parents=True, exist_ok=True)
    for name in TASK_FILES:
        if name not in texts:  # utils.py and the intervention tasks (they include mm_spubench.yaml)
            shutil.copyfile(TASK_DIR / name, out / name)
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8")
    return out
