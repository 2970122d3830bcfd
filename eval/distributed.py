"""Several processes on one run: shard the items, let the main process merge.

Launch the usual ``eval`` command under ``accelerate launch --multi_gpu`` or ``torchrun``; both
set ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and the rendezvous variables this module reads::

    accelerate launch --multi_gpu --num_processes 4 -m mmspubench.eval.cli eval --model M --device cuda --out runs/m
    torchrun --nproc-per-node 4 -m mmspubench.eval.cli eval --model M --device cuda --out runs/m

(``accelerate launch --cpu`` starts a single process; for several CPU processes use ``torchrun``
or ``accelerate launch --multi_gpu``, which on a machine without GPUs also starts CPU processes.)

Each process loads its own copy of the model (on ``cuda:LOCAL_RANK`` when ``--device cuda``),
evaluates every ``WORLD_SIZE``-th unfinished item and appends to ``samples.rank<R>.jsonl``. After
a barrier the main process merges every samples file into ``samples.jsonl`` (dataset order),
writes results.json and removes the shard files. The processes only synchronise through two
barriers on a CPU (gloo) process group; no tensors are exchanged, so results cannot depend on the
number of processes. A killed multi-process run resumes like a single-process one, with any
number of processes: finished ids are read from every samples file of the folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.json_strict import load_file
from mmspubench.eval import results
from mmspubench.eval.records import SampleResult

BARRIER_TIMEOUT = timedelta(days=2)
"""A barrier waits for the slowest shard; a full run on a slow machine may take many hours."""
_SHARD_GLOB = "samples.rank*.jsonl"
_TIMING_GLOB = "timing.rank*.json"


@dataclass(frozen=True, slots=True)
class Shard:
    """This process's place among the processes of a run."""

    rank: int = 0
    """Global rank, 0 is the main process."""
    world: int = 1
    """Number of processes."""
    local_rank: int = 0
    """Rank on this machine: the GPU index to use."""

    @property
    def is_main(self) -> bool:
        """The process that merges and writes results.json."""
        return self.rank == 0


def current_shard() -> Shard:
    """The shard described by the launcher's environment (a single process without one)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    if not 0 <= rank < world:
        raise ValueError(f"RANK={rank} is outside WORLD_SIZE={world}")
    return Shard(rank=rank, world=world, local_rank=local)


def device_for(device: str, shard: Shard) -> str:
    """``cuda`` without an index becomes this process's GPU when there are several processes."""
    if shard.world > 1 and device == "cuda":
        return f"cuda:{shard.local_rank}"
    return device


def samples_path(out_dir: Path, shard: Shard) -> Path:
    """The file this process appends to."""
    if shard.world == 1:
        return out_dir / results.SAMPLES_NAME
    return out_dir / f"samples.rank{shard.rank}.jsonl"


def all_samples(out_dir: Path) -> list[SampleResult]:
    """Every complete sample in the folder: samples.jsonl and any shard files."""
    files = [out_dir / results.SAMPLES_NAME, *sorted(out_dir.glob(_SHARD_GLOB))]
    out: list[SampleResult] = []
    for path in files:
        out.extend(results.read_samples(path)[0])
    return out


def barrier(shard: Shard) -> None:
    """Wait for every process (no-op for one process)."""
    if shard.world == 1:
        return
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", rank=shard.rank, world_size=shard.world, timeout=BARRIER_TIMEOUT)
    dist.barrier()


def finish(shard: Shard) -> None:
    """Tear down the process group, if this run made one."""
    if shard.world == 1:
        return
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


_TIMED = ("load_seconds", "accuracy_seconds", "cgla_seconds", "scorer_check_seconds", "wall_seconds")


class PartTiming:
    """This process's timing over the parts of a run (each ``eval`` that scored items: a run
    stopped by Ctrl-C, a crash or a timeout resumes in another), in ``timing.rank<R>.json``.

    The file holds the totals of the parts before this one and of this one so far, rewritten
    after every chunk, so an interrupted part's time is counted in the finished run's timing (its
    last, unfinished chunk aside: those items are scored again)."""

    def __init__(self, out_dir: Path, shard: Shard, load_seconds: float, start: float) -> None:
        self.path = out_dir / f"timing.rank{shard.rank}.json"
        before = load_file(self.path) if self.path.is_file() else {}
        self.before: dict[str, float] = {key: float(before.get(key, 0.0)) for key in _TIMED}
        self.before_parts = int(before.get("parts", 0))
        self.load_seconds, self.start, self.items = load_seconds, start, 0

    @property
    def earlier_seconds(self) -> float:
        """Wall-clock seconds of this process's earlier parts."""
        return self.before["wall_seconds"]

    def write(self, clock: Any, check_seconds: float | None = None, items: int = 0) -> None:
        """Record the totals so far (``clock``: the part's model time; ``items`` just scored)."""
        import time

        self.items += items
        now = {
            "load_seconds": self.load_seconds,
            "accuracy_seconds": clock.accuracy_seconds,
            "cgla_seconds": clock.cgla_seconds,
            "scorer_check_seconds": clock.check_seconds if check_seconds is None else check_seconds,
            "wall_seconds": time.perf_counter() - self.start,
        }
        timing: dict[str, Any] = {key: self.before[key] + now[key] for key in _TIMED}
        timing["items_scored"] = self.items  # this part's: a rerun that scored none keeps results.json
        timing["parts"] = self.before_parts + (1 if self.items else 0)
        results.write_json_atomic(self.path, timing)


def merged_timing(out_dir: Path, world: int) -> dict[str, float]:
    """Load time of the slowest process; accuracy and CGLA seconds summed over processes; the
    parts (``eval`` invocations that scored items) of the process that ran the most."""
    parts = [load_file(out_dir / f"timing.rank{r}.json") for r in range(world)]
    return {
        "load_seconds": max(p["load_seconds"] for p in parts),
        "accuracy_seconds": sum(p["accuracy_seconds"] for p in parts),
        "cgla_seconds": sum(p["cgla_seconds"] for p in parts),
        "scorer_check_seconds": sum(p.get("scorer_check_seconds", 0.0) for p in parts),
        "items_scored": sum(p["items_scored"] for p in parts),
        "processes": world,
        "parts": max(p.get("parts", 1) for p in parts),
    }


def merge(
    out_dir: Path,
    ids: Sequence[str],
    stamp: str | None = None,
    known: Sequence[SampleResult] | None = None,
    shard: Shard | None = None,
) -> list[SampleResult]:
    """Write samples.jsonl in dataset order from every samples file; returns the ordered samples.

    ``known``: the samples the main process ``shard`` already holds (the folder's when the run
    opened it, and its own since); then only the other processes' files are read.
    """
    if known is None:
        found = all_samples(out_dir)
    else:
        others = [] if shard is None else [r for r in range(shard.world) if r != shard.rank]
        found = list(known)
        for rank in others:
            found.extend(results.read_samples(out_dir / f"samples.rank{rank}.jsonl")[0])
    by_id: dict[str, SampleResult] = {}
    for sample in found:
        by_id.setdefault(sample.id, sample)
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise RuntimeError(
            f"{out_dir}: {len(missing)} item(s) missing after every shard finished: {missing[:3]}"
        )
    ordered = [by_id[i] for i in ids]
    results.write_samples_atomic(out_dir / results.SAMPLES_NAME, ordered, stamp)
    return ordered


def cleanup(out_dir: Path) -> None:
    """Remove the shard and timing files once samples.jsonl holds everything."""
    for path in [*out_dir.glob(_SHARD_GLOB), *out_dir.glob(_TIMING_GLOB)]:
        path.unlink()
