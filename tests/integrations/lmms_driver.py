"""Run inside the lmms-eval environment: load the task folder with lmms-eval's TaskManager, apply the
task's own hooks to given answers, print what they give as one JSON object.

Usage: python lmms_driver.py TASK_DIR ANSWERS_JSON [TASK]   (ANSWERS_JSON: {item id: raw answer text};
for the circular task mm_spubench_circular {"<item id>#<rotation>": raw answer text}).
TASK may be a tag (mm_spubench_interventions): then ANSWERS_JSON is {task: {item id: text}} and the
object printed is {task: what one task gives}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main(task_dir: str, answers_path: str, name: str = "mm_spubench") -> dict[str, Any]:
    from lmms_eval.tasks import TaskManager, get_task_dict

    answers = json.loads(Path(answers_path).read_text(encoding="utf-8"))
    manager = TaskManager(include_path=task_dir)
    tasks = get_task_dict([name], manager)
    if name in tasks:
        return run_task(tasks[name], answers)
    return {task_name: run_task(task, answers[task_name]) for task_name, task in tasks.items()}


def run_task(task: Any, answers: dict[str, str]) -> dict[str, Any]:
    from mmspubench.eval.interventions import pixel_digest

    texts, records, visuals, digests = {}, {}, 0, {}
    per_metric: dict[str, list[Any]] = {}
    for doc in task.test_docs():
        key = doc["id"] if "mmspubench_rotation" not in doc else f"{doc['id']}#{doc['mmspubench_rotation']}"
        texts[key] = task.doc_to_text(doc)
        shown = task.doc_to_visual(doc)
        visuals += len(shown)
        digests[key] = [pixel_digest(image) for image in shown]
        outcome = task.process_results(doc, [answers[key]])
        for metric, value in outcome.items():
            per_metric.setdefault(metric, []).append(value)
        records[key] = outcome.get("mm_spubench_acc", outcome.get("mm_spubench_circular_acc"))
    figures = {key: task.aggregation()[key](values) for key, values in per_metric.items()}
    return {
        "output_type": task.OUTPUT_TYPE,
        "texts": texts,
        "visuals": visuals,
        "records": records,
        "figures": figures,
        "digests": digests,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
