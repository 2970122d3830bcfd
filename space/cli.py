"""The subcommand of this part (registered by ``mmspubench.cli``): ``space``.

Nothing heavy is imported at module level: gradio, datasets and huggingface_hub load inside the
handlers, so ``mmspubench --help`` stays instant.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mmspubench.options import add_fields, option

SPACE_EPILOG = """examples:
  mmspubench space                                   # bundled synthetic release, http://127.0.0.1:7860
  mmspubench space --dataset repo --results runs     # a built dataset folder and a folder of runs
  mmspubench space build --out space-repo            # a complete Space repository (see space build --help)
  mmspubench space push --repo-id org/name --dry-run # build it and print the upload, send nothing
"""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """``mmspubench space``'s options (``None``: the ``MMSPUBENCH_*`` environment, else the default)."""

    host: str = option("127.0.0.1", "address to listen on")
    """Address the server listens on."""
    port: int = option(7860, "port", arg_type=int)
    """Port the server listens on."""
    dataset: str | None = option(None, "Hub id or local folder (default: bundled synthetic release)")
    """Dataset explored (``MMSPUBENCH_DATASET``)."""
    results: str | None = option(None, "folder (or Hub dataset) of runs for the leaderboard")
    """Runs of the leaderboard (``MMSPUBENCH_RESULTS``)."""
    unknown_keys: str | None = option(
        None,
        "raw release keys outside the key table: error (default) or ignore, as in build",
        choices=("error", "ignore"),
    )
    """A raw release's keys outside the key table (``MMSPUBENCH_UNKNOWN_KEYS``)."""


def _run_space(args: argparse.Namespace) -> int:
    from mmspubench.eval.extras import require

    require("mmspubench space", ["gradio", "pandas", "torch", "transformers"], extra="space")
    from mmspubench.space.layout import LAUNCH_OPTIONS, SpaceConfig, build_app

    env = SpaceConfig.from_env()
    config = SpaceConfig(
        dataset=args.dataset or env.dataset,
        results=args.results or env.results,
        hub_models=env.hub_models,
        unknown_keys=args.unknown_keys or env.unknown_keys,
    )
    demo = build_app(config)
    with stop_signals() as wait:
        demo.launch(server_name=args.host, server_port=args.port, prevent_thread_lock=True, **LAUNCH_OPTIONS)
        where = demo.local_url or f"http://{args.host}:{args.port}/"
        print(f"mmspubench space: serving on {where}; Ctrl-C or SIGTERM stops it", file=sys.stderr)
        how = wait()
    demo.close()
    print(f"mmspubench space: stopped ({how})", file=sys.stderr)
    return 0


@contextlib.contextmanager
def stop_signals() -> Iterator[Callable[[], str]]:
    """Catch SIGTERM from here on (enter before the server starts: a SIGTERM that comes as soon as
    the port answers stops it cleanly too); yields the wait, which returns how the server was
    stopped (``Ctrl-C`` or ``SIGTERM``).

    Stopping a server is its normal end, not an interrupted job: exit 0 with one line, not the
    guard's "partial output removed" (there is no output to remove).
    """
    stopped = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopped.set())

    def wait() -> str:
        try:
            while not stopped.wait(0.2):
                pass
        except KeyboardInterrupt:
            return "Ctrl-C"
        return "SIGTERM"

    try:
        yield wait
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve_takes_the_options(space: argparse.ArgumentParser) -> None:
    """``space serve`` is plain ``space``: it takes the same options (``space --port 1 serve`` too)."""
    serve = next(
        action.choices["serve"]
        for action in space._actions
        if isinstance(action, argparse._SubParsersAction) and "serve" in action.choices
    )
    add_fields(serve, ServeOptions)
    # Unset here, so that an option given before ``serve`` (or its default) is kept.
    names = {f.name for f in dataclasses.fields(ServeOptions)}
    for action in serve._actions:
        if action.dest in names:
            action.default = argparse.SUPPRESS


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``space`` to the ``mmspubench`` parser."""
    space = sub.add_parser(
        "space",
        help="launch the Gradio app locally",
        description="Launch the MM-SpuBench Space (explorer, CGLA view, live runs, leaderboard, submission).",
        epilog=SPACE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_fields(space, ServeOptions)
    space.set_defaults(func=_run_space)
    from mmspubench.space.deploy_cli import register_space_subcommands

    register_space_subcommands(space, _run_space)
    _serve_takes_the_options(space)
