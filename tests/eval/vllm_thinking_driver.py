"""Run one backend with ``--thinking on`` in generate mode (accuracy only) on the bundled synthetic
split, once per token budget, with one model load (a helper of test_vllm_thinking.py, run by the
vLLM environment's python).

usage: python tests/eval/vllm_thinking_driver.py BACKEND MODEL OUT LIMIT BUDGETS_JSON
BUDGETS_JSON maps a run's name to its ``--max-new-tokens``; each run writes OUT/NAME (results.json,
samples.jsonl). On vLLM the engine holds blocks of 32 tokens, as in vllm_driver.py.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path


def main() -> None:
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import prompts
    from mmspubench.eval.backends.registry import get_backend
    from mmspubench.eval.config import with_options
    from mmspubench.eval.runner import run_eval

    backend, model, out, limit, budgets_json = sys.argv[1:6]
    budgets: dict[str, int] = json.loads(budgets_json)
    dataset = str(default_dataset_dir())
    ds, info = load_pinned(dataset, "test")
    plugin = get_backend(backend)
    engine = {"engine_args": json.dumps({"block_size": 32})} if backend == "vllm" else {}
    options = {
        "model": model,
        "dataset": dataset,
        "backend": backend,
        "batch_size": plugin.default_batch_size,
        "metrics": "accuracy",
        "answer_mode": "generate",
        "thinking": "on",
        "limit": int(limit),
        **engine,
    }
    config = dataclasses.replace(with_options(None, options), prompts=prompts.prompt_spec())
    vlm = plugin.load(config, "cpu")  # one load for every budget
    for name, budget in budgets.items():
        run = dataclasses.replace(config, max_new_tokens=int(budget)).validate()
        run_eval(lambda: vlm, ds, info, run, Path(out) / name, progress=False)
    if hasattr(vlm, "close"):  # vLLM: stop the engine's processes now, not at exit
        vlm.close()


if __name__ == "__main__":  # vLLM starts worker processes: the engine is created under this guard
    from mmspubench.eval.backends.vllm.engine import exit_without_teardown

    main()
    exit_without_teardown(0)  # everything is written and the engine stopped
