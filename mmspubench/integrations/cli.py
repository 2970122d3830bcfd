"""``mmspubench ingest``, ``mmspubench export`` and ``mmspubench integrations``: the harness commands.

``ingest inspect`` and ``ingest lmms-eval`` are subcommands of their own (each ``--help`` lists
its own options); every option is declared once (``mmspubench.options.option``).
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from mmspubench.options import add_fields, option
from mmspubench.outputs import refuse_overlap

EPILOG_INSPECT = """examples:
  mmspubench ingest inspect logs/2026-01-01_mm-spubench_abc.eval --out runs/inspect-run
  mmspubench report runs/inspect-run/results.json
"""
EPILOG_LMMS = """lmms-eval's samples file does not name the model, so --model is required (its Hub id, org/name,
or any name for a model that has none).

examples:
  mmspubench ingest lmms-eval out/x_samples_mm_spubench.jsonl --out runs/lmms-run --model org/model
  mmspubench report runs/lmms-run/results.json
"""
EPILOG_EXPORT = """examples (VLMEvalKit reads $LMUData/<name>.tsv; its default LMUData is ~/LMUData):
  export LMUData=$HOME/LMUData && mkdir -p "$LMUData"
  mmspubench export --format vlmevalkit --out "$LMUData/MM_SpuBench.tsv"
  mmspubench export --format vlmevalkit --circular --out "$LMUData/MM_SpuBench_Circular.tsv"
  mmspubench export --format vlmevalkit --interventions grayscale,blur --out "$LMUData/MM_SpuBench.tsv"
  mmspubench export --format vlmevalkit --run runs/qwen --out outputs/Qwen_MM_SpuBench.tsv   # its predictions
"""
EPILOG_INTEGRATIONS = """examples:
  lmms-eval --include_path "$(mmspubench integrations lmms-eval)" --tasks mm_spubench ...
  mmspubench integrations lmms-eval --dataset ./built --out ./mm_spubench_task   # a copy reading ./built
"""


@dataclass(frozen=True, slots=True)
class InspectIngestOptions:
    """``mmspubench ingest inspect``'s options."""

    file: Path = option(
        MISSING, "an Inspect log (.eval or .json) of the mm_spubench task", positional=True, arg_type=Path
    )
    """The Inspect log."""
    out: Path = option(MISSING, "the run folder to write (new or empty)", arg_type=Path)
    """The run folder to write."""


@dataclass(frozen=True, slots=True)
class LmmsIngestOptions:
    """``mmspubench ingest lmms-eval``'s options."""

    file: Path = option(
        MISSING, "an lmms-eval samples file (*_samples_mm_spubench.jsonl)", positional=True, arg_type=Path
    )
    """The samples file lmms-eval's ``--log_samples`` wrote."""
    out: Path = option(MISSING, "the run folder to write (new or empty)", arg_type=Path)
    """The run folder to write."""
    model: str = option(MISSING, "the model lmms-eval ran: its Hub id (org/name) or a name")
    """The model (the samples file does not record it)."""
    dataset: str | None = option(None, "the task's dataset_path: Hub id or built folder (default: bundled)")
    """The dataset the task read."""
    dataset_revision: str | None = option(None, "the Hub revision of --dataset")
    """Its Hub revision."""


def _add_ingest(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "ingest", help="turn a finished Inspect or lmms-eval run into a run folder (report, submit)"
    )
    harness = p.add_subparsers(dest="harness", required=True, metavar="HARNESS")
    for name, cls, epilog, what in (
        ("inspect", InspectIngestOptions, EPILOG_INSPECT, "an Inspect log"),
        ("lmms-eval", LmmsIngestOptions, EPILOG_LMMS, "an lmms-eval samples file"),
    ):
        q = harness.add_parser(
            name,
            help=f"{what} -> a run folder",
            description=f"Read {what} of the mm_spubench task, re-read every answer with mmspubench's "
            "parser, check the harness's own scores and figures, write samples.jsonl and results.json.",
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_fields(q, cls)
        q.set_defaults(func=run_ingest)


def _add_export(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "export",
        help="write the split in another harness's format (VLMEvalKit TSV)",
        epilog=EPILOG_EXPORT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--format", choices=("vlmevalkit",), required=True, help="the output format")
    p.add_argument(
        "--out", type=Path, required=True, help="the .tsv file to write, e.g. ~/LMUData/MM_SpuBench.tsv"
    )
    p.add_argument("--dataset", default=None, help="Hub id, built folder or raw release (default: bundled)")
    p.add_argument("--dataset-revision", default=None, help="Hub revision of --dataset")
    p.add_argument("--split", default="test", help="dataset split (default: test)")
    p.add_argument(
        "--circular",
        action="store_true",
        help="also write each item's rotations 1-3 as VLMEvalKit's CircularEval copies (index + k*1e6); "
        "the file name must contain 'circular'",
    )
    p.add_argument(
        "--interventions",
        default=None,
        metavar="NAME,...",
        help="also write one TSV per intervention beside --out (<stem>_<name>.tsv, cf:NAME as cf-NAME): "
        "the image as mmspubench eval --interventions shows it; built-ins grayscale, blur, equalize, "
        "noise, or cf:NAME",
    )
    p.add_argument(
        "--run",
        type=Path,
        default=None,
        metavar="DIR",
        help="write VLMEvalKit's prediction file of this generate-mode run folder's answers instead of the "
        "dataset TSV: prediction (the text after the reasoning), thinking, raw_output, read_by",
    )
    p.set_defaults(func=run_export)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``ingest``, ``export`` and ``integrations`` to the ``mmspubench`` parser."""
    _add_ingest(sub)
    _add_export(sub)
    p = sub.add_parser(
        "integrations",
        help="print where a harness's shipped task files are (or write a copy for your dataset)",
        epilog=EPILOG_INTEGRATIONS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("harness", choices=("lmms-eval",), help="lmms-eval: its --include_path folder")
    p.add_argument(
        "--dataset", default=None, help="write a copy of the task reading this Hub id or built folder"
    )
    p.add_argument("--out", type=Path, default=None, help="with --dataset: the new task folder to write")
    p.set_defaults(func=run_integrations)


def run_ingest(args: argparse.Namespace) -> int:
    """``mmspubench ingest inspect|lmms-eval``."""
    from mmspubench.eval.results_file import Accuracy, Results
    from mmspubench.integrations.ingest import sources as ingest_sources
    from mmspubench.integrations.ingest.run import check_out, ingest
    from mmspubench.redact import clean

    check_out(args.out)  # before the file is read
    refuse_overlap("--out", args.out, [args.file], folder=True)
    if args.harness == "inspect":
        from mmspubench.eval.extras import require

        require("mmspubench ingest inspect", ["inspect_ai"], extra="inspect")
        run = ingest_sources.read_inspect_log(args.file)
    else:
        run = ingest_sources.read_lmms_samples(args.file, args.model, args.dataset, args.dataset_revision)
    results = Results.from_json(ingest(run, args.out), args.out)
    acc = results.accuracy or Accuracy()
    line = f"{args.out}: {run.harness} {run.version} run of {run.harness_model}, {acc.n} items"
    shown = {name: results.section(name) for name in ("circular", "blind")}
    views = "".join(f", {name} {section['accuracy']:.2f}%" for name, section in shown.items() if section)
    for name, figures in (results.section("interventions") or {}).get("by_intervention", {}).items():
        views += f", {name} {figures['accuracy']['overall']:.2f}%"
    print(clean(f"{line}, accuracy {acc.overall:.2f}%{views}"))
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``mmspubench export``."""
    from mmspubench.integrations.items import load_split
    from mmspubench.integrations.vlmevalkit import check_target, write_tsv

    if args.run is not None:
        return _export_predictions(args)
    check_target(args.out, args.circular)  # before the dataset is read
    names: tuple[str, ...] = ()
    if args.interventions is not None:
        from mmspubench.eval.intervention_names import parse_names
        from mmspubench.integrations.vlmevalkit import intervention_names

        names = intervention_names(parse_names(args.interventions))  # '' refused, as by eval
    refuse_overlap("--out", args.out, [d for d in [args.dataset] if d and Path(d).exists()])
    split = load_split(args.dataset, args.dataset_revision, args.split)
    paths = write_tsv(split, args.out, str(args.dataset or "the bundled release"), args.circular, names)
    copies = ", each in its 4 rotations (CircularEval)" if args.circular else ""
    print(f"{args.out}: {len(split.items)} items in VLMEvalKit's MCQ layout{copies}")
    for name, path in zip(names, paths[1:], strict=True):
        print(f"{path}: the same items under the {name} intervention")
    return 0


def _export_predictions(args: argparse.Namespace) -> int:
    """``mmspubench export --run DIR``: VLMEvalKit's prediction file of a run's answers."""
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.eval.results import SAMPLES_NAME, read_finished_samples
    from mmspubench.integrations.items import load_split
    from mmspubench.integrations.vlmevalkit import check_generated, check_target, write_predictions

    if args.circular or args.interventions is not None:
        raise MMSpuBenchError(
            "--run exports the answers of the published order; it takes no --circular or --interventions"
        )
    check_target(args.out)  # before anything is read
    refuse_overlap("--out", args.out, [args.run, *[d for d in [args.dataset] if d and Path(d).exists()]])
    samples_path = args.run / SAMPLES_NAME
    samples = read_finished_samples(samples_path)
    check_generated(samples, str(samples_path))  # before the dataset is read
    split = load_split(args.dataset, args.dataset_revision, args.split)
    n = write_predictions(
        split, samples, args.out, str(samples_path), str(args.dataset or "the bundled release")
    )
    print(f"{args.out}: {n} answers of {args.run} in VLMEvalKit's prediction layout")
    return 0


def run_integrations(args: argparse.Namespace) -> int:
    """``mmspubench integrations lmms-eval``: the task folder, or a copy pinned to ``--dataset``."""
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.integrations.lmms_eval import TASK_DIR, write_task_copy

    if (args.dataset is None) != (args.out is None):
        raise MMSpuBenchError("--dataset and --out go together: the copy's dataset and its folder")
    if args.dataset is None:
        print(TASK_DIR)
        return 0
    # A task folder inside a built dataset changes its content hash (its runs no longer resume).
    refuse_overlap("--out", args.out, [d for d in [args.dataset] if Path(d).exists()], folder=True)
    folder = write_task_copy(args.dataset, args.out)
    print(folder)
    return 0
