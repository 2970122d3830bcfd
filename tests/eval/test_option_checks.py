"""Every option is checked, type and range, before any data or model is loaded (issue: a negative
seed used to fail after the whole run and leave a folder every resume refused)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import mmspubench
import pytest
from mmspubench.cli import build_parser, main
from mmspubench.errors import MMSpuBenchError

BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"seed": -1}, "--seed must be an integer from 0 to"),
    ({"seed": 2**32}, "--seed must be an integer from 0 to"),
    ({"seed": 1.5}, "--seed 1.5: expected an integer"),
    ({"limit": -1}, "--limit must be a positive"),
    ({"limit": "5"}, "--limit '5': expected an integer"),
    ({"limit": True}, "--limit True: expected an integer"),
    ({"batch_size": 0}, "--batch-size must be an integer from 1"),
    ({"batch_size": 10**12}, "--batch-size must be an integer from 1"),
    ({"max_new_tokens": 0}, "--max-new-tokens must be positive"),
    ({"max_new_tokens": 10**9}, "--max-new-tokens must be positive, at most"),
    ({"request_timeout": float("nan")}, "--request-timeout nan: expected a finite number"),
    ({"request_timeout": float("inf")}, "--request-timeout inf: expected a finite number"),
    ({"request_timeout": 0}, "--request-timeout must be a number of seconds"),
    ({"max_retries": -1}, "--max-retries must be an integer from 0"),
    ({"max_concurrency": 0}, "--max-concurrency must be an integer from 1"),
    ({"split": ""}, "--split: empty"),
    ({"device": " "}, "--device: empty"),
    ({"model": ""}, "--model: empty"),
    ({"trust_remote_code": "yes"}, "--trust-remote-code 'yes': expected true/false"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_the_api_refuses_a_bad_option_before_anything_loads(
    options: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmspubench.dataset_builder.load as load

    def no_loading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the dataset was loaded before the options were checked")

    monkeypatch.setattr(load, "load_pinned", no_loading)
    with pytest.raises(MMSpuBenchError) as caught:
        mmspubench.evaluate(progress=False, **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "-1"], "--seed must be an integer from 0 to 4294967295, got -1"),
        (["--batch-size", "0"], "--batch-size must be an integer from 1"),
        (["--limit", "-5"], "--limit must be a positive"),
        (["--request-timeout", "nan"], "--request-timeout nan"),
        (["--max-new-tokens", "99999999"], "--max-new-tokens must be positive"),
        (["--out", ""], "--out: empty"),
        (["--out", "runs/a\x1b[31mred\nb"], "--out 'runs/a\\x1b[31mred\\nb': a control character"),
        (["--model", "org/m\rodel"], "--model 'org/m\\rodel': a control character"),
    ],
)
def test_the_command_refuses_a_bad_option_in_one_line_and_writes_nothing(
    argv: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mmspubench.dataset_builder.load as load

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(load, "load_pinned", lambda *a, **k: pytest.fail("loaded before the check"))
    out = tmp_path / "run"
    args = ["eval", "--out", str(out), "--no-progress", *argv] if "--out" not in argv else ["eval", *argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_file_or_under_a_file_is_refused_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmspubench.dataset_builder.load as load

    monkeypatch.setattr(load, "load_pinned", lambda *a, **k: pytest.fail("loaded before the check"))
    afile = tmp_path / "file"
    afile.write_text("x")
    for out, message in [(afile, "--out is a file"), (afile / "run", "which is a file")]:
        assert main(["eval", "--out", str(out), "--no-progress"]) == 2
        assert message in capsys.readouterr().err
    assert afile.read_text() == "x"


def _eval_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["eval"]


def test_eval_help_states_every_default() -> None:
    missing = [
        action.option_strings[0]
        for action in _eval_parser()._actions
        if action.option_strings and action.dest != "help" and "default" not in (action.help or "")
    ]
    assert missing == []
    text = _eval_parser().format_help()
    for default in ["(default: accuracy,cgla)", "(default: generate)", "(default: fast)", "(default: 16)"]:
        assert default in " ".join(text.split())
