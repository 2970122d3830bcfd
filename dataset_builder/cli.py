"""Subcommands of this part (registered by ``mmspubench.cli``).

Nothing heavy is imported here: ``datasets`` and ``huggingface_hub`` load inside the handlers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mmspubench.dataset_builder.synth import cli as synth_cli
from mmspubench.options import add_fields, values_of

BUILD_EPILOG = """examples:
  mmspubench build --source raw --out repo
  mmspubench build --source raw --out repo --overwrite
  python -c "from datasets import load_dataset; print(load_dataset('repo', split='test'))"
"""

PUSH_EPILOG = """examples:
  mmspubench push --repo-dir repo --repo-id org/MM-SpuBench --dry-run
  mmspubench push --repo-dir repo --repo-id org/MM-SpuBench --private
  mmspubench push --repo-dir repo --repo-id org/MM-SpuBench --revision v1.0
"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this part's subcommands to the ``mmspubench`` parser."""
    from mmspubench.dataset_builder.builder import BuildOptions

    build = sub.add_parser(
        "build",
        help="raw release (annotation.json + data/images/) -> Hub-layout dataset folder",
        description="Validate every record and image of a raw release, then write data/test-*.parquet "
        "(images embedded), README.md (card with statistics) and eval.yaml into --out.",
        epilog=BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument(
        "--source", required=True, type=Path, help="raw release folder holding annotation.json"
    )
    build.add_argument(
        "--out", required=True, type=Path, help="folder to create (the Hub repository content)"
    )
    build.add_argument("--overwrite", action="store_true", help="replace --out if it already exists")
    add_fields(build, BuildOptions)
    build.set_defaults(func=_run_build)

    push = sub.add_parser(
        "push",
        help="publish a built dataset folder to the Hub",
        description="Upload a folder written by `mmspubench build` to a Hub dataset repository in one commit.",
        epilog=PUSH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    push.add_argument("--repo-dir", required=True, type=Path, help="folder written by `mmspubench build`")
    push.add_argument("--repo-id", required=True, help="Hub dataset id, e.g. org/MM-SpuBench")
    push.add_argument("--revision", default=None, help="branch to commit to (created if missing)")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--dry-run", action="store_true", help="print the operations, send nothing")
    push.set_defaults(func=_run_push)

    synth_cli.register(sub)


def _run_build(args: argparse.Namespace) -> int:
    from mmspubench.dataset_builder.builder import BuildOptions, build_repo
    from mmspubench.errors import MMSpuBenchError

    options = BuildOptions(**values_of(BuildOptions, args))
    if options.max_image_pixels <= 0:
        raise MMSpuBenchError(f"--max-image-pixels {options.max_image_pixels}: expected a positive number")
    out = build_repo(args.source, args.out, overwrite=args.overwrite, options=options)
    print(f"built {out}")
    return 0


def _run_push(args: argparse.Namespace) -> int:
    from mmspubench.dataset_builder.push import push

    push(args.repo_dir, args.repo_id, revision=args.revision, private=args.private, dry_run=args.dry_run)
    return 0
