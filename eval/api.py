"""The Python API of a run: :func:`evaluate`, which the ``mmspubench eval`` command wraps.

A notebook never shells out::

    from mmspubench import evaluate
    results = evaluate(model="llava-hf/llava-onevision-qwen2-0.5b-ov-hf", dataset="mmbench/MM-SpuBench",
                       device="cuda", dtype="bfloat16", out="runs/ov-0.5b")

``results`` is the results.json object (docs/DESIGN.md, "Result files"); with ``out`` the run folder
holds results.json and samples.jsonl exactly as the command writes them (and resumes from them),
without it the run happens in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig, with_options

if TYPE_CHECKING:
    from mmspubench.eval.backends.plugin import Backend
    from mmspubench.eval.run_folder import CheckedOut

logger = logging.getLogger(__name__)


def evaluate(
    model: str | Path | None = None,
    dataset: str | Path | None = None,
    out: str | Path | None = None,
    *,
    config: RunConfig | None = None,
    **options: Any,
) -> dict[str, Any] | None:
    """Evaluate ``model`` on ``dataset`` and return the results.json object.

    ``model``/``dataset`` default to the bundled tiny model and synthetic release; ``options`` are
    the fields of :class:`~mmspubench.eval.config.RunConfig` (``limit=``, ``metrics=("cgla",)``,
    ``answer_mode="logprob"``, ``device=``...), checked by its ``validate()``. Returns ``None`` only
    on the non-main processes of a multi-process launch. Raises :class:`MMSpuBenchError` on bad input.
    """
    given = {"model": model, "dataset": dataset, "out": out}
    values = {k: str(v) for k, v in given.items() if v is not None}
    run = with_options(config, {**values, **options})
    if run.out is not None:
        results = run_config(run, notify=logger.info)[0]
    else:
        with tempfile.TemporaryDirectory(prefix="mmspubench-run-") as tmp:
            results = run_config(dataclasses.replace(run, out=str(Path(tmp) / "run")), notify=logger.info)[0]
    if run.model is None and results is not None:
        from mmspubench.eval.bundled import bundled_model_note

        logger.info(bundled_model_note())
    return results


def default_out(model: str, now: datetime | None = None) -> Path:
    """``runs/<model name>-<UTC time>``, the command's run folder when ``--out`` is not given."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    name = Path(model).name if Path(model).exists() else model.replace("/", "__")
    return Path("runs") / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}-{stamp}"


def resolve_model(config: RunConfig) -> str:
    """The model a run uses: the one given, else the bundled tiny model's folder."""
    if config.model is not None:
        return config.model
    from mmspubench.eval.bundled import bundled_model_dir

    return str(bundled_model_dir())


def run_config(config: RunConfig, *, notify: Callable[[str], None]) -> tuple[dict[str, Any] | None, Path]:
    """Run (or resume) ``config`` into ``config.out``; the command and :func:`evaluate` both end here.

    ``notify`` receives the notes for the user (e.g. that a finished run was left unchanged).
    Returns results.json's object (``None`` on non-main processes) and the run folder. Every option,
    the run folder, the engine's packages and (transformers) the device are checked before any
    data or model is loaded: ``config`` comes from :func:`~mmspubench.eval.config.with_options` or
    :func:`~mmspubench.eval.config.from_args`, whose ``validate()`` is the one check of the options;
    the run folder is checked here, once, and the runner trusts it.
    """
    from mmspubench.eval import distributed
    from mmspubench.eval.progress_bars import libraries_quiet
    from mmspubench.eval.run_folder import check_out_dir
    from mmspubench.outputs import refuse_overlap

    if config.out is None:
        raise MMSpuBenchError("no run folder: pass --out DIR (out=...)")
    out = check_out_dir(Path(config.out))
    refuse_overlap("--out", config.out, [p for p in (config.model, config.dataset) if p and Path(p).exists()])
    shard = distributed.current_shard()
    plugin = config.plugin()
    plugin.preflight(config, shard.world)
    try:
        with libraries_quiet(config.progress):
            return _run(config, plugin, out, shard, notify), Path(config.out)
    finally:
        distributed.finish(shard)


def _run(
    config: RunConfig, plugin: Backend, out: CheckedOut, shard: Any, notify: Callable[[str], None]
) -> dict[str, Any] | None:
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import distributed, prompts
    from mmspubench.eval.runner import max_new_tokens, run_eval

    if config.dataset is None:
        from mmspubench.dataset_builder.defaults import default_dataset_dir

        config = dataclasses.replace(config, dataset=str(default_dataset_dir()))
    assert config.dataset is not None and config.out is not None
    ds, dataset_info = load_pinned(
        config.dataset, config.split, revision=config.dataset_revision, unknown_keys=config.unknown_keys
    )
    batch_size = config.batch_size or plugin.default_batch_size
    config = dataclasses.replace(
        config,
        model=resolve_model(config),
        prompts=prompts.prompt_spec(config.prompt_variant, config.cgla_prompt_variant),
        batch_size=batch_size,
    )
    thinks = plugin.thinks(config) if plugin.thinks is not None else config.thinking == "on"
    config = dataclasses.replace(config, max_new_tokens=max_new_tokens(config, thinks))
    loaded: list[Any] = []

    def load() -> Any:
        loaded.append(plugin.load(config, distributed.device_for(config.device, shard)))
        return loaded[-1]

    try:
        return run_eval(
            load,
            ds,
            dataset_info,
            config,
            out,
            shard=shard,
            progress=config.progress,
            notify=notify,
        )
    finally:
        for vlm in loaded:  # engines with processes of their own (vLLM) stop them here, not at exit
            close = getattr(vlm, "close", None)
            if close is not None:
                close()
