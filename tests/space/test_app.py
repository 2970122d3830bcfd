from __future__ import annotations

import argparse
from pathlib import Path

from mmspubench.eval.cli import build_parser
from mmspubench.space.layout import TITLE, build_app

from .test_handlers import state  # noqa: F401  (fixture)


def test_every_event_has_an_api_name_and_the_title_names_the_benchmark(state) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    demo = build_app(state=state)
    assert TITLE == "MM-SpuBench" and demo.title == "MM-SpuBench"
    names = [fn.api_name for fn in demo.fns.values()]
    assert names and all(isinstance(n, str) and n for n in names), names
    assert len(set(names)) == len(names)
    for needed in ("run", "show_cgla", "open_item", "select_item", "validate_submission", "show_prompts"):
        assert needed in names
    run = next(fn for fn in demo.fns.values() if fn.api_name == "run")
    assert run.concurrency_limit == 1


def test_space_readme_has_the_space_yaml() -> None:
    text = (Path(__file__).parents[2] / "space" / "README.md").read_text()
    header = text.split("---")[1]
    for line in ("sdk: gradio", "sdk_version: 6.31.0", "app_file: app.py", "license:", "short_description:", "tags:"):
        assert line in header, line


def test_cli_options() -> None:
    args = build_parser().parse_args(["space", "--port", "7000", "--results", "runs"])
    assert (args.host, args.port, args.dataset, args.results) == ("127.0.0.1", 7000, None, "runs")
    args = build_parser().parse_args(["submit", "r.json", "--model-repo", "o/m", "--dry-run", "out"])
    assert isinstance(args, argparse.Namespace) and args.dry_run == "out" and args.model_repo == "o/m"
