"""Run one backend on the bundled synthetic split, generate and logprob answers, for several jobs
with one model load (a helper of test_vllm_equality.py, run by the vLLM environment's python).

usage: python tests/eval/vllm_driver.py BACKEND SCORER MODEL OUT LIMIT ENGINE_ARGS_JSON JOBS_JSON
JOBS_JSON is a list of jobs, run in its order by the one model (on vLLM: one engine, whose prefix
cache and counts carry over from job to job), each ``{"name": N, "views": V}`` with optionally
``"limit"`` (default LIMIT) and ``"cache_offset"``; each writes OUT/N/generate and OUT/N/logprob
run folders (results.json, samples.jsonl).

- ``views`` ``""``: generate mode with CGLA (the fast path's check on the first item), logprob mode
  with accuracy. ``"interventions"``: every built-in intervention, CGLA under each in generate mode.
  Other views (e.g. ``circular,blind``): both modes run ``accuracy`` and these confound views,
  without the fast path's check (``scorer_check 0``: one call per chunk) and without CGLA.
- On vLLM a job with views also writes OUT/N/cache_reads-MODE.json: per ``score`` call, per request
  in input order, the prompt tokens the engine ran, whether it had an image, and how many its first
  pass read from the prefix cache (before any rescoring).
- ``cache_offset``: from this job on, every score read through the prefix cache is off by it (a
  stand-in regression, which the run's check must catch); the job's refusal is written to
  OUT/N/error.txt and the driver goes on (a job without it that fails stops the driver).
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


def run_job(vlm: Any, loading: Any, job: dict[str, Any], out: Path, limit: int) -> None:
    """One job's generate and logprob runs (module doc), by ``vlm``, loaded with ``loading``."""
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import prompts
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.runner import run_eval

    dataset = str(default_dataset_dir())
    ds, info = load_pinned(dataset, "test")
    views = tuple(v for v in job["views"].split(",") if v)
    modes = (("generate", ("accuracy", *views)), ("logprob", ("accuracy", *views)))
    if not views:
        modes = (("generate", ("accuracy", "cgla")), ("logprob", ("accuracy",)))
    if views == ("interventions",):  # every built-in, with CGLA under each in generate mode
        modes = (("generate", ("accuracy", "cgla", *views)), ("logprob", ("accuracy", *views)))
    for mode, metrics in modes:
        config = RunConfig(
            model=loading.model,
            dataset=dataset,
            metrics=metrics,
            answer_mode=mode,
            scorer=loading.scorer,
            backend=loading.backend,
            batch_size=loading.batch_size,
            limit=int(job.get("limit", limit)),
            prompts=prompts.prompt_spec(),
            # the views' tests read the cache reads of one call per chunk: the fast path's check
            # (which scores the first item in a call of its own) is tested without views
            scorer_check=0 if views else 1,
        )
        CACHE_READS.clear()
        run_eval(lambda: vlm, ds, info, config, out / mode, progress=False)
        if views and loading.backend == "vllm":
            (out / f"cache_reads-{mode}.json").write_text(json.dumps(CACHE_READS))


CACHE_READS: list[list[dict[str, Any]]] = []
"""The current mode's logged ``score`` calls (vLLM jobs with views)."""


def main() -> None:
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.eval.backends.registry import get_backend
    from mmspubench.eval.config import with_options

    backend, scorer, model, out, limit, engine_json, jobs_json = sys.argv[1:8]
    engine_args = json.loads(engine_json)
    jobs: list[dict[str, Any]] = json.loads(jobs_json)
    plugin = get_backend(backend)
    batch = plugin.default_batch_size
    engine = {"engine_args": json.dumps(engine_args)} if engine_args else {}
    loading = with_options(
        None, {"model": model, "backend": backend, "batch_size": batch, "scorer": scorer, **engine}
    )
    vlm = plugin.load(loading, "cpu")
    if backend == "vllm":
        record_cache_reads(CACHE_READS)
    for job in jobs:
        folder = Path(out) / job["name"]
        if "cache_offset" in job:
            regress_cache_reads(float(job["cache_offset"]))
            try:
                run_job(vlm, loading, job, folder, int(limit))
            except MMSpuBenchError as refusal:
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "error.txt").write_text(str(refusal))
            continue
        run_job(vlm, loading, job, folder, int(limit))
    if hasattr(vlm, "close"):  # vLLM: stop the engine's processes now, not at exit
        vlm.close()


if __name__ == "__main__":  # vLLM starts worker processes: the engine is created under this guard
    from mmspubench.eval.backends.vllm.engine import exit_without_teardown

    main()
    exit_without_teardown(0)  # everything is written and the engine stopped
