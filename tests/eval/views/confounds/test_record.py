"""A confound view's record read back by ``eval`` (a rerun of a finished run, a resume) is taken
only as the evaluator writes it: a letter outside A-D, or rotations that are not the four
rotation objects, is one line naming the file or record and the field, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import results

from tests.eval.test_confounds import _run, always_a

METRICS = ("accuracy", "circular", "blind")
Line = dict[str, Any]


def _edit(path: Path, index: int, edit: Callable[[Line], None], keep: int | None = None) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()][:keep]
    edit(lines[index])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _letter(field: str, letter: str) -> Callable[[Line], None]:
    def edit(line: Line) -> None:
        (line["rotations"][2] if field == "rotations" else line["blind"])["prediction"] = letter

    return edit


@pytest.mark.parametrize("keep", [None, 10], ids=["rerun", "resume"])
@pytest.mark.parametrize("letter", ["b", "E"])
@pytest.mark.parametrize("field", ["rotations", "blind"])
@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_a_view_letter_outside_a_to_d_stops_a_rerun_in_one_line(
    mode: str, field: str, letter: str, keep: int | None, tmp_path: Path
) -> None:
    _run(tmp_path / "r", always_a, metrics=METRICS, answer_mode=mode, blind_image="grey")
    _edit(tmp_path / "r" / "samples.jsonl", 3, _letter(field, letter), keep)
    match = rf"record '000003': field '{field}\.prediction': .*'{letter}' is not A, B, C, D or null"
    with pytest.raises(MMSpuBenchError, match=match):
        _run(tmp_path / "r", always_a, metrics=METRICS, answer_mode=mode, blind_image="grey")


@pytest.mark.parametrize("value", [5, "ABCD", [1, 2, 3, 4], [{"rotation": 0}] * 4, []])
def test_rotations_that_are_not_four_rotation_objects_stop_a_rerun_in_one_line(
    value: Any, tmp_path: Path
) -> None:
    _run(tmp_path / "r", always_a, metrics=METRICS, blind_image="grey")
    _edit(tmp_path / "r" / "samples.jsonl", 3, lambda line: line.update(rotations=value))
    with pytest.raises(
        MMSpuBenchError, match=r"samples\.jsonl: line 4: .*record '000003': field 'rotations"
    ) as err:
        _run(tmp_path / "r", always_a, metrics=METRICS, blind_image="grey")
    assert "\n" not in str(err.value)


def test_a_huge_integer_score_is_read_as_infinity_not_a_traceback(tmp_path: Path) -> None:
    _run(tmp_path / "r", always_a, metrics=METRICS, answer_mode="logprob", blind_image="grey")
    path = tmp_path / "r" / "samples.jsonl"
    _edit(path, 1, lambda line: line["option_scores"].__setitem__(0, 10**400))
    samples, _ = results.read_samples(path)
    assert samples[1].option_scores is not None and samples[1].option_scores[0] == float("inf")
