"""The top-level guard: no traceback ever reaches a user; a bug leaves a log file with the traceback."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import commands
from mmspubench.guard import run_guarded
from mmspubench.redact import forget_secrets, register_secret


def _err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_an_unexpected_exception_is_one_line_naming_a_log_with_the_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMSPUBENCH_LOG_DIR", str(tmp_path / "logs"))

    def broken(args: Any) -> int:
        table: dict[str, int] = {}
        return table["a key that is not there"]

    monkeypatch.setattr(commands, "run_report_command", broken)
    status = main(["report", "whatever.json"])
    lines = _err_lines(capsys)
    assert status == 1 and len(lines) == 1, lines
    assert lines[0].startswith("mmspubench report: internal error (KeyError")
    logs = list((tmp_path / "logs").iterdir())
    assert len(logs) == 1 and str(logs[0]) in lines[0]
    text = logs[0].read_text()
    assert "Traceback (most recent call last)" in text and "a key that is not there" in text


@pytest.mark.parametrize(
    ("error", "status", "text"),
    [
        (MMSpuBenchError("x.json: record '1': field 'a': bad"), 2, "error: x.json: record '1'"),
        (OSError(errno.ENOSPC, "No space left on device", "/full/disk"), 2, "/full/disk: No space left"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)
def test_known_failures_map_to_their_exit_codes(
    capsys: pytest.CaptureFixture[str], error: BaseException, status: int, text: str
) -> None:
    def fail(args: Any) -> int:
        raise error

    assert run_guarded("build", fail, None) == status
    lines = _err_lines(capsys)
    assert len(lines) == 1 and text in lines[0], lines


def test_sigterm_unwinds_through_finally_and_exits_143(capsys: pytest.CaptureFixture[str]) -> None:
    cleaned: list[bool] = []

    def work(args: Any) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()  # never reached: the handler raises as soon as the signal arrives
            return 0
        finally:
            cleaned.append(True)

    before = signal.getsignal(signal.SIGTERM)
    assert run_guarded("build", work, None) == 143
    assert cleaned == [True]
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back
    assert "terminated" in _err_lines(capsys)[0]


def test_every_printed_line_and_log_is_cleaned_of_keys_and_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMSPUBENCH_LOG_DIR", str(tmp_path / "logs"))
    register_secret("plain-key-value-42")
    hostile = (
        "\x1b]0;owned\x07\x1b[2Jserver said: plain-key-value-42 and Bearer sk-abcdefghijklmnop0123\x9b1;1H"
    )
    try:
        for error, status in (
            (MMSpuBenchError(hostile), 2),
            (OSError(5, hostile, hostile), 2),
            (KeyError(hostile), 1),
        ):

            def fail(args: Any, error: BaseException = error) -> int:
                raise error

            assert run_guarded("build", fail, None) == status
    finally:
        forget_secrets()
    err = capsys.readouterr().err
    assert err.count("server said: *** and Bearer ***") == 4, err  # the OSError shows it twice
    assert not set(err) & {"\x1b", "\x07", "\x9b"}
    log = next((tmp_path / "logs").iterdir()).read_text()
    assert "plain-key-value-42" not in log and "sk-abcdef" not in log and "\x1b" not in log
    assert "Traceback" in log and "server said: ***" in log


def _report_into_a_closed_pipe(tmp_path: Path, *command: str) -> tuple[int, str]:
    """Run a command whose stdout is a pipe nobody reads any more (``cmd | head -1`` after head ended)."""
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mmspubench", *command],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
    finally:
        os.close(write)
    return done.returncode, done.stderr


@pytest.mark.process
def test_a_reader_that_stops_reading_ends_the_command_silently(tmp_path: Path) -> None:
    """`report | head -1`: no "error: Broken pipe", the status of a program SIGPIPE ended."""
    results = tmp_path / "results.json"
    results.write_text(_minimal_results())
    code, err = _report_into_a_closed_pipe(tmp_path, "report", str(results))
    assert (code, err) == (141, "")


def _minimal_results() -> str:
    import json

    return json.dumps(
        {
            "benchmark": "MM-SpuBench",
            "schema_version": 1,
            "dataset": {"id": "d", "split": "test", "n": 1},
            "model": {"id": "m"},
            "config": {"metrics": ["accuracy"]},
            "accuracy": None,
            "cgla": None,
        }
    )


@pytest.mark.process
def test_python_m_outside_the_environment_is_one_line(tmp_path: Path) -> None:
    """From a clone, with a Python the package is not installed in: how to reach it, no traceback."""
    import subprocess
    import sys

    base = getattr(sys, "_base_executable", sys.executable)
    probe = subprocess.run([base, "-s", "-c", "import mmspubench.eval"], capture_output=True, cwd=tmp_path)
    if probe.returncode == 0:
        pytest.skip("the base interpreter has the package installed")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [base, "-s", "-m", "mmspubench", "eval"], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("mmspubench: error: the package is not installed in this Python")
    assert len(done.stderr.splitlines()) == 1 and ".venv/bin/mmspubench" in done.stderr
