from __future__ import annotations

import pytest
from mmspubench.cli import build_parser, main


def test_help_lists_every_contract_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("build", "synth", "eval", "report", "push", "submit", "space", "sweep"):
        choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
        assert isinstance(choices, dict) and command in choices, command
        assert command in out


@pytest.mark.process
def test_python_dash_m_mmspubench_runs_the_cli() -> None:
    import subprocess
    import sys

    from mmspubench import __version__

    done = subprocess.run(
        [sys.executable, "-m", "mmspubench", "--version"], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"mmspubench {__version__}\n", "")
    done = subprocess.run(
        [sys.executable, "-m", "mmspubench", "evl"], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stderr) == (
        2,
        "mmspubench: error: unknown command 'evl' (did you mean eval?)\n",
    )
