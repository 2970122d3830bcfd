"""``mmspubench space build|push|serve``: subcommands of ``space`` (plain ``space`` still launches)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mmspubench.space.deploy import SpaceSettings

BUILD_EPILOG = """examples:
  mmspubench space build --out space-repo                 # app.py, README.md, requirements.txt, mmspubench/
  mmspubench space build --out space-repo --dataset mmbench/MM-SpuBench --results mmbench/MM-SpuBench-results
  mmspubench space push --repo-id mmbench/MM-SpuBench-space --dry-run   # print the operations, send nothing
"""


def _settings(args: argparse.Namespace) -> SpaceSettings:
    from mmspubench.space.deploy import SpaceSettings

    return SpaceSettings(
        dataset=args.dataset, results=args.results, models=args.models, revision=args.published_revision
    )


def _run_build(args: argparse.Namespace) -> int:
    from mmspubench.space.deploy import build_space

    settings = _settings(args)
    files = build_space(Path(args.out), settings, overwrite=args.overwrite)
    print(f"wrote the Space repository {args.out} ({len(files)} files)")
    return 0


def _run_push(args: argparse.Namespace) -> int:
    import tempfile

    from mmspubench.space.deploy import build_space, push_space

    settings = _settings(args)
    with tempfile.TemporaryDirectory(prefix="mmspubench-space-") as tmp:
        folder = Path(tmp) / "space"
        files = build_space(folder, settings)
        print(push_space(folder, files, args.repo_id, dry_run=args.dry_run, token=args.token))
    return 0


def _add_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default=None, help="MMSPUBENCH_DATASET: Hub dataset id to explore")
    parser.add_argument("--results", default=None, help="MMSPUBENCH_RESULTS: results dataset of runs")
    parser.add_argument("--models", default=None, help="MMSPUBENCH_SPACE_MODELS: comma-separated live models")
    parser.add_argument(
        "--published-revision",
        default=None,
        help="MMSPUBENCH_PUBLISHED_REVISION: dataset commit of submissions",
    )


def register_space_subcommands(
    space: argparse.ArgumentParser, serve: Callable[[argparse.Namespace], int]
) -> None:
    """Add ``build``, ``push`` and ``serve`` under ``space`` (no subcommand: serve, as before)."""
    sub = space.add_subparsers(dest="space_command", metavar="{serve,build,push}")
    serve_parser = sub.add_parser("serve", help="launch the app (the same as plain `mmspubench space`)")
    serve_parser.set_defaults(func=serve)
    build = sub.add_parser(
        "build",
        help="write a complete Space repository (app.py, README.md, requirements.txt, vendored package)",
        epilog=BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument("--out", required=True, help="folder to write (must be empty or missing)")
    build.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    _add_settings(build)
    build.set_defaults(func=_run_build)
    push = sub.add_parser("push", help="build the Space and upload it to the Hub in one commit")
    push.add_argument("--repo-id", required=True, help="the Space, ORG/NAME (created if missing)")
    push.add_argument("--dry-run", action="store_true", help="print the operations, send nothing")
    push.add_argument("--token", default=None, help="Hub token (default: the logged-in token)")
    _add_settings(push)
    push.set_defaults(func=_run_push)
