"""Score the same CGLA requests with ``--backend vllm`` (prefix cache read) and the transformers
plain scorer in one process (a helper of test_vllm_equality.py, run by the vLLM environment's python).

usage: python tests/eval/vllm_score_driver.py MODEL OUT_JSON ITEMS ENGINE_ARGS_JSON

The requests are every CGLA condition of the first ITEMS items of the bundled synthetic split, plus
cases that make the cache cover scored positions: each item's first condition twice more (identical
requests) and with a continuation long enough to span cache blocks, once alone and once as a prefix
of a longer continuation; then the long ones again in a second call, whose cache reads cover their
scored positions (the rescoring path). Writes {"vllm": [...], "plain": [...], "long": [...], "first_call": {...},
"prefix_cache": {...}} (cache counts after the first call and at the end).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LONG = " that sits in the picture next to the wooden table with a striped cloth and a metal lamp"


def requests_of(model: Any, n: int) -> list[Any]:
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import data, prompts
    from mmspubench.eval.protocol import ScoreRequest

    dataset = str(default_dataset_dir())
    ds, _ = load_pinned(dataset, "test")
    out = []
    for item in list(data.iter_items(ds, data.item_ids(ds, None), dataset))[:n]:
        continuation = prompts.cgla_continuation(item.class_name)
        contexts = [
            model.render(prompts.cgla_prompt(a)) for a in (*item.core_attributes, *item.spurious_attributes)
        ]
        out += [ScoreRequest(item.pil_image, c, continuation) for c in contexts]
        out += [ScoreRequest(item.pil_image, contexts[0], continuation)] * 2  # identical conditions
        long = continuation + LONG
        out += [ScoreRequest(item.pil_image, contexts[0], long)]  # a prefix of the next one
        # over 128 tokens (the CPU backend's default block): a cached copy covers scored positions
        out += [ScoreRequest(item.pil_image, contexts[0], long + LONG * 5)]
    return out


def main() -> None:
    model, out, n, engine_args = sys.argv[1:5]
    from mmspubench.eval.config import with_options

    def load(backend: str, scorer: str, **engine: str) -> Any:
        config = with_options(
            None,
            {
                "model": model,
                "backend": backend,
                "batch_size": 256 if backend == "vllm" else 8,
                "scorer": scorer,
                **engine,
            },
        )
        return config.plugin().load(config, "cpu")

    vllm = load("vllm", "fast", engine_args=engine_args)
    requests = requests_of(vllm, int(n))
    got = vllm.score(requests)
    # the long continuations once more: now their whole prompts are in the cache, which covers
    # the scored positions, so these are the rescored requests
    again = [r for r in requests if r.continuation.endswith(LONG)]
    first = vllm.backend_info["prefix_cache"]
    got_again = vllm.score(again)
    cache = vllm.backend_info["prefix_cache"]
    vllm.close()
    plain = load("transformers", "plain")
    texts = [(r.context, r.continuation) for r in requests_of(plain, int(n))]
    assert texts == [(r.context, r.continuation) for r in requests], "both backends render alike"
    want = plain.score(requests)
    want_again = [w for w, r in zip(want, requests, strict=True) if r.continuation.endswith(LONG)]
    long = [r.continuation.endswith(LONG) for r in requests + again]
    result = {
        "vllm": got + got_again,
        "plain": want + want_again,
        "long": long,
        "first_call": first,
        "prefix_cache": cache,
    }
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":  # vLLM starts worker processes: the engine is created under this guard
    from mmspubench.eval.backends.vllm.engine import exit_without_teardown

    main()
    exit_without_teardown(0)
