"""``mmspubench ingest``, ``mmspubench export`` and ``mmspubench integrations``: the harness commands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mmspubench.outputs import refuse_overlap

EPILOG_INGEST = """examples:
  mmspubench ingest inspect logs/2026-01-01_mm-spubench_abc.eval --out runs/inspect-run
  mmspubench ingest lmms-eval out/x_samples_mm_spubench.jsonl --out runs/lmms-run --model org/model
  mmspubench report runs/inspect-run/results.json
"""


def _add_ingest(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "ingest",
        help="turn a finished Inspect or lmms-eval run into a run folder (report, submit)",
        epilog=EPILOG_INGEST,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("harness", choices=("inspect", "lmms-eval"), help="the harness that made the file")
    p.add_argument("file", type=Path, help="an Inspect log (.eval/.json) or an lmms-eval samples .jsonl")
    p.add_argument("--out", type=Path, required=True, help="the run folder to write (new or empty)")
    p.add_argument("--model", default="lmms-eval model", help="lmms-eval: the model's name or Hub id")
    p.add_argument("--dataset", default=None, help="lmms-eval: the task's dataset_path (default: bundled)")
    p.add_argument("--dataset-revision", default=None, help="lmms-eval: the Hub revision of --dataset")
    p.set_defaults(func=run_ingest)


def _add_export(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("export", help="write the split in another harness's format (VLMEvalKit TSV)")
    p.add_argument("--format", choices=("vlmevalkit",), required=True, help="the output format")
    p.add_argument("--out", type=Path, required=True, help="the file to write, e.g. $LMUData/MM_SpuBench.tsv")
    p.add_argument("--dataset", default=None, help="Hub id, built folder or raw release (default: bundled)")
    p.add_argument("--dataset-revision", default=None, help="Hub revision of --dataset")
    p.add_argument("--split", default="test", help="dataset split (default: test)")
    p.set_defaults(func=run_export)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``ingest``, ``export`` and ``integrations`` to the ``mmspubench`` parser."""
    _add_ingest(sub)
    _add_export(sub)
    p = sub.add_parser("integrations", help="print where a harness's shipped task files are")
    p.add_argument("harness", choices=("lmms-eval",), help="lmms-eval: its --include_path folder")
    p.set_defaults(func=run_integrations)


def run_ingest(args: argparse.Namespace) -> int:
    """``mmspubench ingest``."""
    from mmspubench.integrations import ingest_sources
    from mmspubench.integrations.ingest import check_out, ingest

    check_out(args.out)  # before the file is read
    refuse_overlap("--out", args.out, [args.file], folder=True)
    if args.harness == "inspect":
        from mmspubench.eval.extras import require

        require("mmspubench ingest inspect", ["inspect_ai"], extra="inspect")
        run = ingest_sources.read_inspect_log(args.file)
    else:
        run = ingest_sources.read_lmms_samples(args.file, args.model, args.dataset, args.dataset_revision)
    results = ingest(run, args.out)
    acc = results["accuracy"]
    print(f"{args.out}: {run.harness} {run.version} run of {acc['n']} items, accuracy {acc['overall']:.2f}%")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``mmspubench export``."""
    from mmspubench.integrations.items import load_split
    from mmspubench.integrations.vlmevalkit import check_target, write_tsv

    check_target(args.out)  # before the dataset is read
    refuse_overlap("--out", args.out, [d for d in [args.dataset] if d and Path(d).exists()])
    split = load_split(args.dataset, args.dataset_revision, args.split)
    write_tsv(split, args.out)
    print(f"{args.out}: {len(split.items)} items in VLMEvalKit's MCQ layout")
    return 0


def run_integrations(args: argparse.Namespace) -> int:
    """``mmspubench integrations lmms-eval``: the task folder."""
    from mmspubench.integrations.lmms_eval import TASK_DIR

    print(TASK_DIR)
    return 0
