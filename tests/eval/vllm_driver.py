"""Run one backend on the bundled synthetic split, generate+CGLA and logprob answers, with one
model load (a helper of test_vllm_equality.py, run by the vLLM environment's python).

usage: python tests/eval/vllm_driver.py BACKEND SCORER MODEL OUT LIMIT [ENGINE_ARGS_JSON [VIEWS]]
writes OUT/generate and OUT/logprob run folders (results.json, samples.jsonl).

VIEWS (e.g. ``circular,blind``): both modes run ``accuracy`` and these confound views instead,
without the fast path's check (``--scorer-check 0``: one call per chunk) (no CGLA; ``interventions``: every built-in intervention, with CGLA under each in generate mode); on vLLM the driver then also writes OUT/cache_reads-MODE.json: per ``score`` call, per
request in input order, the prompt tokens the engine ran, whether it had an image, and how many its first pass read from
the prefix cache (before any rescoring).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def record_cache_reads(log: list[list[dict[str, Any]]]) -> None:
    """Wrap the vLLM backend's cache schedule so that each call's first-pass reads are logged."""
    from mmspubench.eval.backends.vllm import engine as vllm_engine
    from mmspubench.eval.backends.vllm.cache import num_cached

    original = vllm_engine.score_reading_cache

    def logged(run: Any, prompts: Any, keys: Any, *args: Any, **kwargs: Any) -> list[Any]:
        first: dict[int, dict[str, Any]] = {}

        def spy(batch: Any, read: bool) -> list[Any]:
            outs = run(batch, read)
            for prompt, out in zip(batch, outs, strict=True):
                if read:
                    image = "multi_modal_data" in prompt
                    ran = list(out.prompt_token_ids)
                    first[id(prompt)] = {"ran": ran, "cached": num_cached(out), "image": image}
            return outs

        outputs = original(spy, prompts, keys, *args, **kwargs)
        log.append([first[id(p)] for p in prompts])
        return outputs

    vllm_engine.score_reading_cache = logged


def regress_cache_reads(offset: float) -> None:
    """A stand-in vLLM regression: every score read through the prefix cache is off by ``offset``
    (the fresh computation, ``reference_score``, is not), which the run's check must catch."""
    from mmspubench.eval.backends.vllm import engine as vllm_engine

    original = vllm_engine.VLLMModel._score

    def regressed(self: Any, requests: Any, *, read_cache: bool, counts: Any) -> list[float]:
        scores = original(self, requests, read_cache=read_cache, counts=counts)
        return [s + offset for s in scores] if read_cache else scores

    vllm_engine.VLLMModel._score = regressed


def main() -> None:
    import os

    if os.environ.get("MMSPUBENCH_TEST_CACHE_OFFSET"):
        regress_cache_reads(float(os.environ["MMSPUBENCH_TEST_CACHE_OFFSET"]))
    backend, scorer, model, out, limit = sys.argv[1:6]
    engine_args = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    views = tuple(v for v in sys.argv[7].split(",") if v) if len(sys.argv) > 7 else ()
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
    log: list[list[dict[str, Any]]] = []
    if views and backend == "vllm":
        record_cache_reads(log)
    modes = (("generate", ("accuracy", *views)), ("logprob", ("accuracy", *views)))
    if not views:
        modes = (("generate", ("accuracy", "cgla")), ("logprob", ("accuracy",)))
    if views == ("interventions",):  # every built-in, with CGLA under each in generate mode
        modes = (("generate", ("accuracy", "cgla", *views)), ("logprob", ("accuracy", *views)))
    for mode, metrics in modes:
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
            # the views' tests read the cache reads of one call per chunk: the fast path's check
            # (which scores the first item in a call of its own) is tested without views
            scorer_check=0 if views else 1,
        )
        run_eval(lambda: vlm, ds, info, config, Path(out) / mode, progress=False)
        if views and backend == "vllm":
            (Path(out) / f"cache_reads-{mode}.json").write_text(json.dumps(log))
            log.clear()
    if hasattr(vlm, "close"):  # vLLM: stop the engine's processes now, not at exit
        vlm.close()


if __name__ == "__main__":  # vLLM starts worker processes: the engine is created under this guard
    from mmspubench.eval.backends.vllm.engine import exit_without_teardown

    main()
    exit_without_teardown(0)  # everything is written and the engine stopped
