"""``submit`` accepts an answer read by a judge only with its evidence: the run records its judge
(``config.extract`` judge, the judge's model, base URL and prompt version, results.json's
``judge`` the same) and the sample the judge's reply, which reads again by the verdict rule as the
recorded letter. Each forgery is one line naming the file, the record and the field (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.parse import parse_answer
from mmspubench.eval.replies.record import ReplyReading

from tests.eval.submit.test_submit import DATASET, REVISION, _submit_dry_run, published_split
from tests.eval.submit.test_submit_generate_answers import _records
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests

Forge = Callable[[SampleResult], SampleResult]
SENTENCE = "Surely the second one, nothing else."
"""An answer the strict parser reads nothing from (the judge is asked)."""
JUDGE = {"extract": "judge", "judge_model": "judge-1", "judge_base_url": "http://127.0.0.1:8001/v1"}


def _judged(s: SampleResult) -> SampleResult:
    """``s`` answered in a sentence, read by the judge as B (its reply ``" B."``)."""
    reading = ReplyReading(SENTENCE, "judge", judge=" B.")
    return replace(s, prediction="B", correct=s.answer == "B", raw_output=SENTENCE, reading=reading)


def _write(root: Path, forge: Forge, judge: dict[str, Any] | None = JUDGE) -> Path:
    samples = _records(("accuracy",), lambda s: s)
    samples[1] = forge(_judged(samples[1]))
    config = RunConfig(
        model="org/model", dataset=DATASET, prompts=prompt_spec(), metrics=("accuracy",), **(judge or {})
    )
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model_identity()) / "results.json"


def _submit(tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    out = tmp_path / "out"
    status = _submit_dry_run(results, out)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert status == 0 or (len(lines) == 1 and "Traceback" not in err and not out.exists()), err
    return status, err


def test_a_judged_answer_with_its_judge_and_verdict_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert parse_answer(SENTENCE, ["a", "b", "c", "d"]) is None
    results = _write(tmp_path / "run", lambda s: s)
    line = json.loads((results.parent / "samples.jsonl").read_text().splitlines()[1])
    assert line["read_by"] == "judge" and line["judge"] == " B."
    assert _submit(tmp_path, results, capsys)[0] == 0
    assert main(["report", str(results.parent)]) == 0  # the judge's share is marked in the report
    header, _, row = capsys.readouterr().out.strip().splitlines()[:3]
    pairs = zip(header.strip("|").split(" | "), row.strip("|").split(" | "), strict=True)
    cells = {h.strip(): c.strip() for h, c in pairs}
    assert cells["Read by (parser / judge / none %)"].split(" / ")[1] == "5.00"  # 1 of 20


def _reading(**changes: Any) -> Forge:
    def forge(s: SampleResult) -> SampleResult:
        assert s.reading is not None
        return replace(s, reading=replace(s.reading, **changes))

    return forge


def _predicted(letter: str | None) -> Forge:
    return lambda s: replace(s, prediction=letter, correct=s.answer == letter)


def _parsed_with_verdict(s: SampleResult) -> SampleResult:
    """A letter the parser reads, with a judge's verdict beside it (the judge is never asked there)."""
    reading = ReplyReading("B", "parser", judge="B")
    return replace(s, prediction="B", correct=s.answer == "B", raw_output="B", reading=reading)


SAMPLE_FORGERIES = [
    (
        _reading(judge=None),
        "record '000001': field 'judge': read by a judge, but the judge's verdict is missing",
    ),
    (
        _predicted("C"),
        "record '000001': field 'judge': the judge's verdict ' B.' reads as 'B', but the prediction is 'C'",
    ),
    (_reading(judge="Answer: B"), "field 'judge': the judge's verdict 'Answer: B' reads as None"),
    (
        lambda s: _reading(read_by="none")(_predicted(None)(s)),  # the judge said B, recorded as none
        "record '000001': field 'judge': the judge's verdict ' B.' reads as 'B', but the prediction is None",
    ),
    (
        _parsed_with_verdict,
        "record '000001': field 'judge': a judge's verdict is recorded, but the parser reads 'B'",
    ),
]


@pytest.mark.parametrize(("forge", "said"), SAMPLE_FORGERIES)
def test_a_judged_answer_its_verdict_does_not_give_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], forge: Forge, said: str
) -> None:
    status, err = _submit(tmp_path, _write(tmp_path / "run", forge), capsys)
    assert status == 2 and said in err and "samples.jsonl" in err, err


def test_a_verdict_in_a_run_without_a_judge_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _write(
        tmp_path / "run", lambda s: _reading(read_by="none", judge="none")(_predicted(None)(s)), judge=None
    )
    status, err = _submit(tmp_path, results, capsys)
    assert (
        status == 2
        and "record '000001': field 'judge': a judge's verdict is recorded, but the run records no judge"
        in err
    ), err


def _edit_results(results: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    obj = json.loads(results.read_text())
    edit(obj)
    results.write_text(json.dumps(obj, indent=2))
    return results


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            lambda o: o["judge"].update(model="judge-2"),
            "field 'judge.model': 'judge-2' but the run's config gives 'judge-1'",
        ),
        (lambda o: o["judge"].update(base_url="http://10.0.0.1/v1"), "field 'judge.base_url'"),
        (lambda o: o["judge"].update(prompt_version="judge-v0"), "field 'judge.prompt_version'"),
        (lambda o: o.pop("judge"), "field 'judge': missing in a run read by a judge"),
        (lambda o: o["config"].update(judge_prompt="judge-v0"), "field 'config.judge_prompt'"),
        (lambda o: o["config"].pop("judge_model"), "field 'config.judge_model': missing"),
        (lambda o: o.update(judge="judge-1"), "field 'judge' must be an object"),
    ],
)
def test_a_run_whose_judge_is_not_recorded_whole_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[dict[str, Any]], None], said: str
) -> None:
    results = _edit_results(_write(tmp_path / "run", lambda s: s), edit)
    status, err = _submit(tmp_path, results, capsys)
    assert status == 2 and said in err and str(results) in err, err
