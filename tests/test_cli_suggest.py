"""An option typo is answered by the subcommand it was given to, with its usage and the closest option."""

from __future__ import annotations

from pathlib import Path

import pytest
from mmspubench.cli import build_parser, main


def _refusal(argv: list[str] | None, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_typo_on_eval_names_eval_its_usage_and_the_closest_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(["eval", "--prompt-varient", "attribute-hint"], capsys)
    assert err.startswith("usage: mmspubench eval ")
    assert err.splitlines()[-1] == (
        "mmspubench eval: error: unrecognized arguments: --prompt-varient attribute-hint "
        "(did you mean --prompt-variant?)"
    )


def test_a_typo_on_space_is_an_unknown_option_not_an_invalid_subcommand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(["space", "--prot", "7861"], capsys)
    assert err.startswith("usage: mmspubench space ")
    assert (
        err.splitlines()[-1]
        == "mmspubench space: error: unrecognized arguments: --prot (did you mean --port?)"
    )
    err = _refusal(["space", "serve", "--prot", "7861"], capsys)
    assert err.splitlines()[-1].startswith(
        "mmspubench space serve: error: unrecognized arguments: --prot 7861"
    )
    assert err.splitlines()[-1].endswith("(did you mean --port?)")


def test_a_typo_far_from_every_option_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refusal(["eval", "--zzzzzzzz"], capsys)
    assert err.splitlines()[-1] == "mmspubench eval: error: unrecognized arguments: --zzzzzzzz"


@pytest.mark.parametrize(
    ("argv", "port", "host"),
    [
        (["space", "serve", "--port", "7861"], 7861, "127.0.0.1"),
        (["space", "--port", "7862", "serve"], 7862, "127.0.0.1"),
        (["space", "--host", "0.0.0.0", "serve", "--port", "1"], 1, "0.0.0.0"),
        (["space", "serve"], 7860, "127.0.0.1"),
        (["space"], 7860, "127.0.0.1"),
    ],
)
def test_space_serve_takes_the_options_of_space(argv: list[str], port: int, host: str) -> None:
    args = build_parser().parse_args(argv)
    assert (args.port, args.host) == (port, host)
    assert args.func.__name__ == "_run_space"


def test_a_typo_of_a_required_option_is_named_not_the_missing_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(["space", "build", "--outt", "x"], capsys)
    assert err.startswith("usage: mmspubench space build ")
    assert err.splitlines()[-1] == (
        "mmspubench space build: error: unrecognized arguments: --outt (did you mean --out?)"
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["evl"], "mmspubench: error: unknown command 'evl' (did you mean eval?)"),
        (["space", "biuld"], "mmspubench space: error: unknown command 'biuld' (did you mean build?)"),
        (["zzzz"], "mmspubench: error: unknown command 'zzzz'"),
        (["EVAL"], "mmspubench: error: unknown command 'EVAL' (did you mean eval?)"),
        # the misspelt command comes first: it is named, not the options meant for it
        (["evl", "--out", "x"], "mmspubench: error: unknown command 'evl' (did you mean eval?)"),
        (
            ["space", "biuld", "--out", "x"],
            "mmspubench space: error: unknown command 'biuld' (did you mean build?)",
        ),
    ],
)
def test_a_subcommand_typo_is_one_line_with_the_closest_command(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal(argv, capsys) == line + "\n"


def test_a_choice_typo_names_the_closest_choice(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refusal(["eval", "--backend", "vlm"], capsys)
    assert err.splitlines()[-1].startswith(
        "mmspubench eval: error: argument --backend: invalid choice: 'vlm' (did you mean 'vllm'? choose from "
    )


@pytest.mark.parametrize(
    ("argv", "tail"),
    [
        (["--metrics", "accuracy,", "circular"], "circular"),
        (["--metrics=accuracy,", "circular"], "circular"),
        (["--metrics", "accuracy", ",circular"], ",circular"),
    ],
)
def test_a_space_in_a_comma_list_is_named(
    argv: list[str], tail: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refusal(["eval", *argv], capsys)
    assert err.splitlines()[-1] == (
        f"mmspubench eval: error: unrecognized arguments: {tail} "
        "(the list of --metrics has a space: write --metrics accuracy,circular)"
    )


def test_a_stray_word_after_an_option_is_not_called_a_split_list(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refusal(["eval", "--limit", "3", "circular"], capsys)
    assert err.splitlines()[-1] == "mmspubench eval: error: unrecognized arguments: circular"


def test_a_metric_typo_names_the_closest_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--metrics", "accuracy,circuler", "--out", str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run").exists()
    err = capsys.readouterr().err
    assert err == (
        "mmspubench eval: error: --metrics 'accuracy,circuler': unknown metric 'circuler' "
        "(did you mean circular?); expected a comma-separated subset of "
        "accuracy,cgla,circular,blind,calibration,interventions\n"
    )


def test_a_type_typo_of_synth_names_the_closest_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["synth", "--text-prior-types", "backgrund", "--out", str(tmp_path / "raw")]) == 2
    assert not (tmp_path / "raw").exists()
    assert capsys.readouterr().err.rstrip().endswith("got 'backgrund' (did you mean background?)")


def test_the_console_script_s_own_arguments_get_the_suggestion_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console script calls ``main()`` with no list: argparse reads ``sys.argv``, and so must the hint."""
    monkeypatch.setattr("sys.argv", ["mmspubench", "--versoin"])
    err = _refusal(None, capsys)
    assert (
        err.splitlines()[-1]
        == "mmspubench: error: unrecognized arguments: --versoin (did you mean --version?)"
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["sweep", "x.yaml", "--gpus", "0,", "1"],
            "mmspubench sweep: error: unrecognized arguments: 1 (the list of --gpus has a space: write --gpus 0,1)",
        ),
        (
            ["synth", "--text-prior-types", "BG,", "Col.", "--out", "x"],
            "mmspubench synth: error: unrecognized arguments: Col. "
            "(the list of --text-prior-types has a space: write --text-prior-types BG,Col.)",
        ),
    ],
)
def test_every_comma_list_names_the_space(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal(argv, capsys).splitlines()[-1] == line
