"""`ingest lmms-eval` reads the samples file as strictly as our own files are read: one line, exit 2,
no run folder left, for a key given twice, a lone surrogate, an answer over the line limit, a
version that is no version; its own help; and a copy of the task folder reading a local dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.integrations.lmms_eval import TASK_DIR

from tests.dataset_builder import hub_fixtures as hub
from tests.integrations.test_lmms_eval import _replies, _samples_file


def _lines(samples: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in samples.read_text().splitlines()]


def _ingest(samples: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(out), "--dataset", hub.REPO_ID]
    code = main([*argv, "--model", "org/model"])
    return code, capsys.readouterr().err.strip()


def _refused(samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *expected: str) -> None:
    code, err = _ingest(samples, tmp_path / "run", capsys)
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    assert all(e in err for e in expected), err
    assert not (tmp_path / "run").exists()


def test_a_key_given_twice_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    text = samples.read_text().splitlines()
    first = json.loads(text[0])
    record = first["mm_spubench_acc"]
    flipped = json.dumps(not record["correct"])
    # "correct" twice: json.loads keeps the last (the honest one); ours refuses the line.
    text[0] = text[0].replace('"correct": ', f'"correct": {flipped}, "correct": ', 1)
    samples.write_text("\n".join(text) + "\n")
    _refused(samples, tmp_path, capsys, "line 1", "'correct' appears twice")


def test_a_lone_surrogate_in_an_answer_is_one_line(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    text = samples.read_text().splitlines()
    line = json.loads(text[1])
    line["mm_spubench_acc"]["raw_output"] = "A \ud800"
    text[1] = json.dumps(line)  # ensure_ascii: the surrogate is written as the escape \ud800
    assert "\\ud800" in text[1]
    samples.write_text("\n".join(text) + "\n")
    item_id = line["mm_spubench_acc"]["id"]
    _refused(samples, tmp_path, capsys, f"record {item_id!r}", "field 'raw_output'", "not valid Unicode")


def test_an_answer_over_the_8_mib_line_limit_is_refused_at_ingest(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = _replies()
    first = next(iter(replies))
    replies[first] = "A" + " x" * (9 * 2**20 // 2)  # a 9 MiB answer
    samples = _samples_file(tmp_path / "samples.jsonl", replies)
    _refused(samples, tmp_path, capsys, "line 1", "over the limit of 8 MiB a line")


@pytest.mark.parametrize("version", [None, "unknown", "0.4\x1b]0;owned\x07", "1 2"])
def test_a_harness_version_that_is_no_version_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str | None
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    lines = _lines(samples)
    for line in lines:
        for key in ("mm_spubench_acc",):
            if version is None:
                line[key].pop("harness_version")
            else:
                line[key]["harness_version"] = version
    samples.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    code, err = _ingest(samples, tmp_path / "run", capsys)
    assert code == 2 and "is not a version" in err and "\x1b" not in err and "\x07" not in err
    assert not (tmp_path / "run").exists()


def test_the_run_records_the_model_and_version_given_not_placeholders(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    code, _ = _ingest(samples, tmp_path / "run", capsys)
    assert code == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["model"]["id"] == "org/model" and results["model"]["hub_repo"] == "org/model"
    assert results["harness"] == {
        "name": "lmms_eval",
        "version": "0.4.1",
        "source": "samples.jsonl",
        "model": "org/model",
    }


@pytest.mark.parametrize("model", ["", "  ", "org/\x1b[2Jx"])
def test_a_model_name_that_is_no_name_is_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    samples = _samples_file(tmp_path / "samples.jsonl", _replies())
    argv = ["ingest", "lmms-eval", str(samples), "--out", str(tmp_path / "run"), "--model", model]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--model" in err and "\x1b" not in err and not (tmp_path / "run").exists()


def test_without_model_the_command_names_the_missing_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text("{}\n")
    with pytest.raises(SystemExit) as done:
        main(["ingest", "lmms-eval", str(samples), "--out", str(tmp_path / "run")])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "mmspubench ingest lmms-eval" in err and "--model" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("harness", "own", "other"), [("lmms-eval", "--model", None), ("inspect", "Inspect log", "--model")]
)
def test_each_harness_has_its_own_help(
    capsys: pytest.CaptureFixture[str], harness: str, own: str, other: str | None
) -> None:
    with pytest.raises(SystemExit):
        main(["ingest", harness, "--help"])
    text = capsys.readouterr().out
    assert text.startswith(f"usage: mmspubench ingest {harness} ") and own in text
    assert other is None or other not in text


def test_a_task_copy_reads_the_given_local_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    built = tmp_path / "my built dataset: v1"
    built.mkdir()
    out = tmp_path / "task"
    assert main(["integrations", "lmms-eval", "--dataset", str(built), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: f"!{suffix} {node.value}")
    original = yaml.load((TASK_DIR / "mm_spubench.yaml").read_text(), Loader=Loader)
    copy = yaml.load((out / "mm_spubench.yaml").read_text(), Loader=Loader)
    assert original["dataset_path"] == hub.REPO_ID and copy["dataset_path"] == str(built.resolve())
    assert {k: v for k, v in copy.items() if k != "dataset_path"} == {
        k: v for k, v in original.items() if k != "dataset_path"
    }
    assert (out / "utils.py").read_bytes() == (TASK_DIR / "utils.py").read_bytes()
    assert main(["integrations", "lmms-eval", "--dataset", str(built), "--out", str(out)]) == 2  # not empty
    assert (
        main(
            [
                "integrations",
                "lmms-eval",
                "--dataset",
                str(tmp_path / "nope" / "x" / "y"),
                "--out",
                str(tmp_path / "t2"),
            ]
        )
        == 2
    )
    assert not (tmp_path / "t2").exists()
