from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.analysis.report import markdown_table

ABBREVS = ["BG", "TN", "CO", "RS", "Col.", "Ori.", "LS", "PA", "Sha."]


def _results(
    model_id: str,
    by_type: list[float | None],
    average: float,
    overall: float,
    cgla: float | None,
    dataset: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "benchmark": "MM-SpuBench",
        "model": {"id": model_id, "path": model_id},
        "dataset": dataset or {},
        "accuracy": {
            "average": average,
            "overall": overall,
            "by_type": dict(zip(ABBREVS, by_type, strict=True)),
        },
        "cgla": None if cgla is None else {"acc": cgla},
    }


HUB = {"id": "mmbench/MM-SpuBench", "revision": "0123456789ab", "split": "test", "n": 2400, "split_n": 2400}
LOCAL = {"path": "/data/synth", "content_hash": "d0c52f7c6399", "split": "test", "n": 16, "split_n": 90}
RUN_A = _results(
    "org/model-a", [60.123, 55.35, 63.46, 50.28, 53.25, 62.86, 60.38, 48.15, 54.794], 56.444, 56.0, 41.5, HUB
)
RUN_B = _results(
    "/home/x/models/tiny|b",
    [25.0, None, 0.0, 100.0, 33.333, 50.0, 12.5, 75.0, 20.0],
    39.479,
    31.25,
    None,
    LOCAL,
)

EXPECTED = """\
| Model | Dataset | n | BG | TN | CO | RS | Col. | Ori. | LS | PA | Sha. | Average | Overall | CGLA_acc |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| org/model-a | mmbench/MM-SpuBench@0123456 | 2400 | 60.12 | 55.35 | 63.46 | 50.28 | 53.25 | 62.86 | 60.38 | 48.15 | 54.79 | 56.44 | 56.00 | 41.50 |
| tiny\\|b | synth@d0c52f7 | 16 of 90 (partial) | 25.00 | — | 0.00 | 100.00 | 33.33 | 50.00 | 12.50 | 75.00 | 20.00 | 39.48 | 31.25 | — |"""


def test_markdown_table_of_two_runs() -> None:
    assert markdown_table([RUN_A, RUN_B]) == EXPECTED


def test_scorer_column_and_fallback_note() -> None:
    fell_back = {
        **RUN_A,
        "model": {"id": "org/model-a", "scorer_used": "plain", "scorer_fallback_reason": "why"},
    }
    fast = {**RUN_B, "model": {"id": "b", "scorer_used": "fast", "scorer_fallback_reason": None}}
    lines = markdown_table([fell_back, fast]).splitlines()
    assert lines[0].endswith("| CGLA_acc | Scorer |")
    assert lines[2].endswith("| 41.50 | plain* |") and lines[3].endswith("| — | fast |")
    assert lines[4:] == ["", "\\* org/model-a: the fast scorer was asked for, the plain one ran (why)"]


def test_rows_of_the_same_model_are_told_apart_by_dataset_n_and_answer_mode() -> None:
    full = {**RUN_A, "config": {"answer_mode": "generate"}}
    partial = {**RUN_A, "dataset": {**HUB, "n": 50}, "config": {"answer_mode": "generate"}}
    logprob = {**RUN_A, "config": {"answer_mode": "logprob"}}
    other = {**RUN_A, "dataset": {**HUB, "revision": "fedcba987654", "split": "validation"}, "config": {}}
    lines = markdown_table([full, partial, logprob, other]).splitlines()
    assert "| Answer mode |" in lines[0]
    rows = lines[2:6]
    assert len(set(rows)) == 4
    assert "| 50 of 2400 (partial) |" in rows[1] and "| logprob |" in rows[2]
    assert "mmbench/MM-SpuBench@fedcba9 (validation)" in rows[3]
    # One answer mode for all runs: no column for it.
    assert "Answer mode" not in markdown_table([full, partial]).splitlines()[0]


def test_report_help_says_what_average_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Average (the mean of the per-type accuracies" in text and "Average (overall)" not in text


def test_report_command_reads_files_and_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(RUN_A))
    (tmp_path / "b.json").write_text(json.dumps(RUN_B))
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b.json")]) == 0
    assert capsys.readouterr().out.strip() == EXPECTED


def test_report_of_a_glob_leaves_out_an_unfinished_run_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report runs/*` while one run is still going: the others' table, and a note naming it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(RUN_A))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.json").write_text(json.dumps(RUN_B))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "run.json").write_text("{}")
    (tmp_path / "c" / "samples.jsonl").write_text("")
    assert main(["report", *(str(tmp_path / n) for n in "abc")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == EXPECTED
    assert err == (
        f"mmspubench report: left out {tmp_path / 'c'}: an unfinished run (no results.json yet; rerun "
        "its eval with the same --out to finish it)\n"
    )
    assert main(["report", str(tmp_path / "c")]) == 2
    assert "no finished run to report" in capsys.readouterr().err
    (tmp_path / "d").mkdir()  # an empty folder is no run at all: still an error
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "d")]) == 2


def test_report_rejects_a_file_that_is_not_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"hello": 1}))
    assert main(["report", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "not an MM-SpuBench results.json" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(MMSpuBenchError):
        from mmspubench.eval.analysis.report import load_for_report

        load_for_report([tmp_path / "missing.json"])


def test_report_escapes_control_characters_from_a_results_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = {
        **RUN_A,
        "model": {
            "id": "org/m\x1b]0;owned\x07\x1b[2J\u202e",
            "scorer_used": "plain\x1b[31m",
            "scorer_fallback_reason": "why\nnot\x00",
        },
    }
    (tmp_path / "r.json").write_text(json.dumps(run))
    assert main(["report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\x00\u202e")
    assert "m\\x1b]0;owned\\x07\\x1b[2J\\u202e" in out and "why\\nnot\\x00" in out
    assert len(out.strip().splitlines()) == 5  # header, rule, one row, blank, one note


def test_a_hand_edited_results_file_shows_dashes_not_a_crash() -> None:
    odd = {
        "benchmark": "MM-SpuBench",
        "model": ["not", "an", "object"],
        "dataset": "mmbench",
        "accuracy": {"by_type": [1, 2], "average": "56", "overall": True},
        "cgla": {"acc": None},
        "config": 3,
    }
    row = markdown_table([odd]).splitlines()[2]
    assert row.startswith("| ? | ? | — | — |") and row.count("—") == 13


def test_control_characters_in_names_do_not_reach_the_table() -> None:
    run = {**RUN_A, "model": {"id": "org/x\x1b]0;owned\x07\nnext|row"}}
    row = markdown_table([run]).splitlines()[2]
    assert "\x1b" not in row and "\x07" not in row and "\n" not in row and "next\\|row" in row


def test_rows_of_one_model_have_a_run_column() -> None:
    """Two runs of one model on one dataset (two seeds, two prompts) differ only in figures: the
    ``Run`` column names each; a table of distinct models has none."""
    first, second = (
        {**RUN_A, "created_at": "2026-01-01T10:00:00+00:00"},
        {**RUN_A, "created_at": "2026-01-02"},
    )
    lines = markdown_table([first, second], ["seed-0", "seed-1"]).splitlines()
    assert lines[0].startswith("| Model | Run | Dataset |")
    assert lines[2].startswith("| org/model-a | seed-0 | ") and lines[3].startswith(
        "| org/model-a | seed-1 | "
    )
    # without names (the Python API), the creation times tell them apart
    assert "| 2026-01-01T10:00:00+00:00 |" in markdown_table([first, second]).splitlines()[2]
    assert "| Run |" not in markdown_table([RUN_A, RUN_B], ["a", "b"]).splitlines()[0]
    # rows of one model that the Variant column tells apart need no Run column
    hint = {**first, "config": {"prompt_variant": "core-focus"}}
    assert "| Run |" not in markdown_table([first, hint], ["a", "b"]).splitlines()[0]


def test_report_names_runs_by_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mmspubench.eval.analysis.report import run_names

    for name in ("seed-0", "seed-1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(RUN_A))
    assert main(["report", str(tmp_path / "seed-0"), str(tmp_path / "seed-1" / "results.json")]) == 0
    rows = capsys.readouterr().out.splitlines()[2:4]
    assert rows[0].startswith("| org/model-a | seed-0 |") and rows[1].startswith("| org/model-a | seed-1 |")
    # two folders of one name: the paths as given
    (tmp_path / "b" / "seed-0").mkdir(parents=True)
    assert run_names([tmp_path / "seed-0", tmp_path / "b" / "seed-0"]) == [
        str(tmp_path / "seed-0"),
        str(tmp_path / "b" / "seed-0"),
    ]


def test_the_worst_column_shows_a_tie() -> None:
    """Two types of >= 10 items at the same lowest accuracy: both named (the recorded one first)."""
    accuracy = {
        **RUN_A["accuracy"],
        "by_type": {**RUN_A["accuracy"]["by_type"], "Sha.": 48.15, "TN": 48.15},
        "n_by_type": {**dict.fromkeys(ABBREVS, 27), "TN": 9},
        "worst_type": {"type": "PA", "value": 48.15, "ci95": [30.0, 60.0]},
    }
    row = markdown_table([{**RUN_A, "accuracy": accuracy}]).splitlines()[2]
    assert row.endswith("| PA/Sha. 48.15 |")  # TN has too few items to count
    alone = {**accuracy, "by_type": RUN_A["accuracy"]["by_type"]}
    assert markdown_table([{**RUN_A, "accuracy": alone}]).splitlines()[2].endswith("| PA 48.15 |")
