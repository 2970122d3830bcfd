from __future__ import annotations

import argparse
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.cli import build_parser
from mmspubench.space.handlers import SpaceState
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
    # Model runs are admitted by the model cache's own bounded queue (busy beyond it), not gradio's.
    assert run.concurrency_limit is None and run.concurrency_id == "model"


def test_space_readme_has_the_space_yaml() -> None:
    text = (Path(__file__).parents[2] / "space" / "README.md").read_text()
    header = text.split("---")[1]
    for line in (
        "sdk: gradio",
        "sdk_version: 6.31.0",
        "app_file: app.py",
        "license:",
        "short_description:",
        "tags:",
    ):
        assert line in header, line


def test_cli_options() -> None:
    args = build_parser().parse_args(["space", "--port", "7000", "--results", "runs"])
    assert (args.host, args.port, args.dataset, args.results) == ("127.0.0.1", 7000, None, "runs")
    args = build_parser().parse_args(["submit", "r.json", "--model-repo", "o/m", "--dry-run", "out"])
    assert isinstance(args, argparse.Namespace) and args.dry_run == "out" and args.model_repo == "o/m"


def test_guarded_turns_failures_into_one_line_messages() -> None:
    import gradio as gr
    import pytest
    from mmspubench.app_guard import guarded
    from mmspubench.errors import MMSpuBenchError

    def bad_input(x: int) -> int:
        raise MMSpuBenchError(f"field 'x': bad value {x}")

    def broken(x: int) -> int:
        return [][x]

    with pytest.raises(gr.Error) as err:
        guarded(bad_input)(3)
    assert err.value.message == "field 'x': bad value 3"
    with pytest.raises(gr.Error) as err:
        guarded(broken)(0)
    assert err.value.message.startswith("internal error in broken (IndexError")
    assert guarded(lambda a, b: a + b, 2)(3) == 5


def _launch_recorder(monkeypatch, calls: list[dict[str, object]]) -> None:  # type: ignore[no-untyped-def]
    import time

    import gradio as gr

    def launch(self, **kw):  # type: ignore[no-untyped-def]
        calls.append({"title": self.title, **kw})
        if not kw.get("prevent_thread_lock"):
            time.sleep(5)  # a blocking launch serves until a signal arrives

    monkeypatch.setattr(gr.Blocks, "launch", launch)
    monkeypatch.setattr(gr.Blocks, "close", lambda self, *a, **k: None)


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """A test run started in the background inherits SIGINT ignored (no Ctrl-C would ever arrive,
    and the test would wait forever): give this process Python's own Ctrl-C handler meanwhile."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_sigint")
@pytest.mark.parametrize(("signum", "how"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_space_command_launches_on_localhost_and_stops_cleanly(  # type: ignore[no-untyped-def]
    monkeypatch, tmp_path: Path, capsys, signum: int, how: str
) -> None:
    from mmspubench.cli import main
    from mmspubench.space.layout import LAUNCH_OPTIONS

    from .fixtures import results_json, write_run

    write_run(tmp_path, "r", results_json("org/m", {"BG": 10.0}, 10.0, 5.0, 90))
    calls: list[dict[str, object]] = []
    _launch_recorder(monkeypatch, calls)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signum))
    monkeypatch.setattr("mmspubench.space.layout.build_app", _started(timer))
    assert main(["space", "--results", str(tmp_path), "--port", "7999"]) == 0
    assert calls == [
        {
            "title": "MM-SpuBench",
            "server_name": "127.0.0.1",
            "server_port": 7999,
            "prevent_thread_lock": True,
            "max_file_size": LAUNCH_OPTIONS["max_file_size"],
            "show_error": False,
            "max_threads": 64,
            "css": LAUNCH_OPTIONS["css"],
            "theme": LAUNCH_OPTIONS["theme"],
            "share": False,
            "quiet": True,
        }
    ]
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"mmspubench space: stopped ({how})"
    assert "mmspubench space: serving on http://127.0.0.1:7999/; Ctrl-C or SIGTERM stops it" in err
    assert "partial output removed" not in err and "interrupted" not in err


def _started(timer: threading.Timer):  # type: ignore[no-untyped-def]
    """``build_app`` that starts ``timer`` (the signal) once the app is built."""
    from mmspubench.space import layout

    real = layout.build_app

    def build(*args, **kwargs):  # type: ignore[no-untyped-def]
        demo = real(*args, **kwargs)
        timer.start()
        return demo

    return build


def test_api_parameters_carry_the_handlers_names(state) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    demo = build_app(state=state)
    endpoints = demo.get_api_info()["named_endpoints"]
    names = {api: [p["parameter_name"] for p in info["parameters"]] for api, info in endpoints.items()}
    assert names["/validate_submission"] == ["results_file", "samples_file", "model_repo"]
    assert names["/show_cgla"] == ["item_id", "source", "model_choice"]
    assert names["/open_item"] == ["item_id"]
    assert names["/run"][:3] == ["model_choice", "input_kind", "item_id"]
    assert names["/leaderboard_board_search"] == ["query", "columns", "sort_by", "ascending"]
    assert not [api for api, params in names.items() if any(p.startswith("param_") for p in params)], names


def test_no_component_typesets_latex_from_data(state) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    import gradio as gr

    demo = build_app(state=state)
    shown = [b for b in demo.blocks.values() if isinstance(b, (gr.Markdown, gr.Dataframe))]
    assert shown and all(b.latex_delimiters == [] for b in shown)


def test_launch_prints_no_public_link_hint(state: SpaceState, capfd: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    from mmspubench.space.layout import LAUNCH_OPTIONS

    from .local_app import free_port

    demo = build_app(state=state)
    try:
        demo.launch(
            server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, **LAUNCH_OPTIONS
        )
        assert demo.local_url  # it serves
    finally:
        demo.close()
    printed = capfd.readouterr()
    # was: "* To create a public link, set `share=True` in `launch()`."
    assert "share=True" not in printed.out + printed.err and "public link" not in printed.out + printed.err


def test_the_page_text_is_in_the_visitors_own_font() -> None:
    from mmspubench.space.layout import LAUNCH_OPTIONS, SYSTEM_FONTS

    theme = LAUNCH_OPTIONS["theme"]
    assert theme.font == ", ".join(SYSTEM_FONTS) and "system-ui" in theme.font
    css = theme._get_theme_css()  # what the page loads: no web font for its text
    assert "Source Sans" not in css  # was: Gradio's default web font, "SpuBench" and "CGLA" misdrawn
