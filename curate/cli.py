"""``mmspubench curate select|annotate|review|export`` (registered by the ``mmspubench`` dispatcher).

Nothing heavy is imported here: CLIP, the annotators and Gradio load inside the handlers.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, TypeVar

from mmspubench.options import add_fields, option, values_of

T = TypeVar("T")

EPILOG = """the pipeline of the paper (section 4.2):
  mmspubench curate select   --data images/ --source-name ObjectNet --k 3 --l 20 --out cand
  mmspubench curate annotate --candidates cand --backend transformers --model org/vlm --out draft
  mmspubench curate review   --draft draft --db reviews.sqlite --port 7861
  mmspubench curate export   --draft draft --db reviews.sqlite --min-annotators 5 --min-mean-rating 3 --out raw
  mmspubench build --source raw --out repo
"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``curate`` and its four steps to the ``mmspubench`` parser."""
    curate = sub.add_parser(
        "curate",
        help="make benchmark items from your own images: select, annotate, review, export",
        description="The curation pipeline of the paper (section 4.2).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    steps = curate.add_subparsers(dest="step", required=True, metavar="STEP")
    _add_select(steps)
    _add_annotate(steps)
    _add_review(steps)
    _add_export(steps)


def _add_out(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--out", required=True, type=Path, help=what)
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")


def _add_step(
    steps: argparse._SubParsersAction[Any],
    name: str,
    config: type,
    *,
    help: str,
    description: str,
    inputs: tuple[tuple[str, str], ...] = (),
    out: str,
    func: Callable[[argparse.Namespace], int],
) -> None:
    """A step that reads the folders ``inputs`` (``(flag, help)``), takes ``config``'s fields as
    options and writes a new folder ``--out`` (``out`` its help)."""
    p = steps.add_parser(name, help=help, description=description)
    for flag, what in inputs:
        p.add_argument(flag, required=True, type=Path, help=what)
    add_fields(p, config)
    _add_out(p, out)
    p.set_defaults(func=func)


def _add_select(steps: argparse._SubParsersAction[Any]) -> None:
    from mmspubench.curate.select import SelectConfig

    _add_step(
        steps,
        "select",
        SelectConfig,
        help="keep images whose true class zero-shot CLIP ranks in (k, l]",
        description="Zero-shot CLIP over all class names; keep an image when the 1-based rank r of its "
        "true class satisfies k < r <= l. Writes OUT/candidates.jsonl and OUT/selection.json; resumable.",
        out="candidates folder to create",
        func=_run_select,
    )


def _add_annotate(steps: argparse._SubParsersAction[Any]) -> None:
    from mmspubench.curate.annotate import AnnotateConfig

    _add_step(
        steps,
        "annotate",
        AnnotateConfig,
        help="one structured model request per candidate -> a draft raw release",
        description="Ask a vision-language model for core/spurious attributes, spurious types and a "
        "question under a JSON schema; validate as `build` does; write a raw release + provenance.jsonl.",
        inputs=(("--candidates", "folder written by `curate select`"),),
        out="draft folder to create (a raw release)",
        func=_run_annotate,
    )


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """``curate review``'s options."""

    draft: Path = option(MISSING, "folder written by `curate annotate`", arg_type=Path)
    """The draft release under review."""
    db: Path = option(MISSING, "SQLite file (created when missing)", arg_type=Path)
    """The append-only review database."""
    host: str = option("127.0.0.1", "interface to listen on")
    """Interface the app listens on."""
    port: int = option(7861, "port", arg_type=int)
    """Port the app listens on."""


def _add_review(steps: argparse._SubParsersAction[Any]) -> None:
    p = steps.add_parser(
        "review",
        help="Gradio app: annotators rate, edit, accept or reject draft items",
        description="Serve the review app; every rating and edit goes into an append-only SQLite audit trail.",
    )
    add_fields(p, ReviewOptions)
    p.set_defaults(func=_run_review)


def _add_export(steps: argparse._SubParsersAction[Any]) -> None:
    from mmspubench.curate.export import ExportConfig

    _add_step(
        steps,
        "export",
        ExportConfig,
        help="apply reviews, keep items meeting the thresholds, write a raw release + agreement report",
        description="Latest accepted edits applied; items kept with enough annotators, a high enough mean "
        "rating and a majority of accepts. Prints the agreement report (Krippendorff's alpha).",
        inputs=(
            ("--draft", "folder written by `curate annotate`"),
            ("--db", "SQLite file written by `curate review`"),
        ),
        out="raw release folder to create",
        func=_run_export,
    )


def _config(cls: type[T], args: argparse.Namespace) -> T:
    """The step's config dataclass from the parsed options of the same names (its generated flags)."""
    return cls(**values_of(cls, args))


def _run_select(args: argparse.Namespace) -> int:
    from mmspubench.curate.select import SelectConfig, run_select

    config = _config(SelectConfig, args)
    summary = run_select(config, args.out, overwrite=args.overwrite)
    print(
        f"selected {summary['kept']} of {summary['seen']} images ({summary['images_per_second']} images/s) "
        f"-> {args.out}"
    )
    return 0


def _run_annotate(args: argparse.Namespace) -> int:
    from mmspubench.curate.annotate import AnnotateConfig, run_annotate

    config = _config(AnnotateConfig, args)
    done = run_annotate(args.candidates, config, args.out, overwrite=args.overwrite)
    print(
        f"annotated {done.ok} of {done.total} candidates ({done.failed} failed, see provenance.jsonl) -> {args.out}"
    )
    for item, reason in done.failures[:SHOWN_FAILURES]:
        print(f"  failed {printable(item)}: {printable(reason)[:300]}")
    if done.failed > SHOWN_FAILURES:
        print(f"  ... and {done.failed - SHOWN_FAILURES} more (the reasons are in provenance.jsonl)")
    return 0


SHOWN_FAILURES = 5
"""Failed candidates whose reason ``annotate`` prints (all are in provenance.jsonl)."""


def printable(text: str) -> str:
    """``text`` without control characters or secrets (a model's output must not drive the terminal)."""
    from mmspubench.redact import clean

    return "".join(c if c.isprintable() else " " for c in clean(str(text)))


def printable_report(text: str) -> str:
    """A multi-line report (annotator names, item ids) with no terminal control sequence in it."""
    return "\n".join(printable(line) for line in str(text).splitlines())


def _run_review(args: argparse.Namespace) -> int:
    from mmspubench.curate.review_app import launch_review

    options = ReviewOptions(**values_of(ReviewOptions, args))
    launch_review(options.draft, options.db, host=options.host, port=options.port)
    return 0


def _run_export(args: argparse.Namespace) -> int:
    from mmspubench.curate.export import ExportConfig, run_export

    report = run_export(
        args.draft,
        args.db,
        _config(ExportConfig, args),
        args.out,
        overwrite=args.overwrite,
    )
    print(printable_report(report))
    return 0
