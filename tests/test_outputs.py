"""``mmspubench.outputs``: the one check that an output names no input (hand-built cases)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.outputs import overlap, refuse_overlap


def test_overlap_cases(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "samples.jsonl").write_text("x\n")
    log = tmp_path / "log.json"
    log.write_text("{}")
    os.symlink(run, tmp_path / "alias")
    assert overlap(run / "samples.jsonl", [run]) == f"lies inside the input folder {run}"
    assert overlap(tmp_path / "alias" / "new.json", [run]) == f"lies inside the input folder {run}"
    assert overlap(run, [run]) == f"is the input {run}"
    assert overlap(log, [log]) == f"is the input {log}"
    assert overlap(tmp_path / "x" / ".." / "log.json", [log]) == f"is the input {log}"
    assert overlap(tmp_path / "out.json", [run, log]) is None
    assert overlap(tmp_path / "run2" / "a.json", [run]) is None  # a sibling whose name starts alike
    # an output folder may not hold an input either (writing it would replace or mix them)
    assert overlap(tmp_path, [log], folder=True) == f"holds the input {log}"
    assert overlap(tmp_path, [log]) is None
    os.link(run / "samples.jsonl", tmp_path / "hard.jsonl")
    assert "hard link" in str(overlap(tmp_path / "hard.jsonl", [run]))


def test_refusal_is_one_line_naming_option_and_path(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError) as err:
        refuse_overlap("--json", tmp_path / "a.json", [tmp_path])
    text = str(err.value)
    assert text.startswith(f"--json {tmp_path / 'a.json'}: lies inside the input folder") and "\n" not in text
