"""Run folders for tests: one run by the eval runner with a fake model, or one written by hand from
sample records with eval's own writers (what a forger who reruns the writers gets)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmspubench.eval import distributed, prompts
from mmspubench.eval.config import RunConfig
from mmspubench.eval.records import SampleResult
from mmspubench.eval.results import build_results, write_json_atomic, write_samples_atomic
from mmspubench.eval.run_stamp import model_identity, run_stamp
from mmspubench.eval.runner import run_eval

from tests.eval.fakes import DATASET_INFO, FakeModel, make_dataset


def fake_config(**options: Any) -> RunConfig:
    """The config of a run of the fake model on the hand-made dataset; ``options`` are RunConfig fields."""
    return RunConfig(model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), **options)


def eval_run(
    out: Path,
    load: Callable[[], Any] = FakeModel,
    *,
    n: int = 4,
    dataset: Any = None,
    config: RunConfig | None = None,
    shard: distributed.Shard | None = None,
    progress: bool = False,
    notify: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """Run eval into ``out``: the model ``load`` builds on ``dataset`` (default: the hand-made one of
    ``n`` items), under ``config`` (default: :func:`fake_config`); returns what ``run_eval`` returns."""
    return run_eval(
        load,
        dataset if dataset is not None else make_dataset(n),
        dict(DATASET_INFO),
        config if config is not None else fake_config(),
        out,
        shard=shard,
        progress=progress,
        notify=notify,
    )


def write_run_folder(
    folder: Path,
    config: RunConfig,
    samples: Sequence[SampleResult],
    dataset: Mapping[str, Any],
    model: Mapping[str, Any],
    *,
    timing: Mapping[str, float] | None = None,
    created: str | None = None,
    stamp: bool = True,
) -> Path:
    """Write ``folder`` as eval writes a finished run: results.json recomputed from ``samples``
    (``created_at`` set to ``created`` when given), samples.jsonl with every line stamped with the
    run (``stamp=False``: unstamped lines). Returns the folder."""
    ids = [s.id for s in samples]
    results = build_results(config, model, dataset, samples, ids, timing or {"total_seconds": 1.0})
    if created is not None:
        results["created_at"] = created
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / "results.json", results)
    run = run_stamp(config.identity(), dataset, model_identity(model)) if stamp else None
    write_samples_atomic(folder / "samples.jsonl", samples, run)
    return folder
