"""Run one backend on the bundled synthetic split, generate+CGLA and logprob answers, with one
model load (a helper of test_vllm_equality.py, run by the vLLM environment's python).

usage: python tests/eval/vllm_driver.py BACKEND SCORER MODEL OUT LIMIT [ENGINE_ARGS_JSON]
writes OUT/generate and OUT/logprob run folders (results.json, samples.jsonl).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    backend, scorer, model, out, limit = sys.argv[1:6]
    engine_args = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import prompts
    from mmspubench.eval.backends.registry import get_backend
    from mmspubench.eval.config import RunConfig, with_options
    from mmspubench.eval.runner import run_eval

    dataset = str(default_dataset_dir())
    ds, info = load_pinned(dataset, "test")
    plugin = get_backend(backend)
    batch = plugin.default_batch_size
    engine = {"engine_args": json.dumps(engine_args)} if engine_args else {}
    loading = with_options(
        None, {"model": model, "backend": backend, "batch_size": batch, "scorer": scorer, **engine}
    )
    vlm = plugin.load(loading, "cpu")
    for mode, metrics in (("generate", ("accuracy", "cgla")), ("logprob", ("accuracy",))):
        config = RunConfig(
            model=model,
            dataset=dataset,
            metrics=metrics,
            answer_mode=mode,
            scorer=scorer,
            backend=backend,
            batch_size=batch,
            limit=int(limit),
            prompts=prompts.prompt_spec(),
        )
        run_eval(lambda: vlm, ds, info, config, Path(out) / mode, progress=False)
    if hasattr(vlm, "close"):  # vLLM: stop the engine's processes now, not at exit
        vlm.close()


if __name__ == "__main__":  # vLLM starts worker processes: the engine is created under this guard
    from mmspubench.eval.backends.vllm_engine import exit_without_teardown

    main()
    exit_without_teardown(0)  # everything is written and the engine stopped
