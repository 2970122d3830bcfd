"""``submit`` reads each answer of a thinking run again: its raw output split by the run's
reasoning style (results.json ``model.reasoning_style``) must give the recorded answer text, and
the recorded path the recorded letter; a letter taken from the reasoning, a judge answer without
a judge, or a run that hides its style are refused in one line naming the record and the field."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.record import ReplyReading

from tests.eval.submit.test_submit import DATASET, REVISION, _submit_dry_run, published_split
from tests.eval.submit.test_submit_generate_answers import _records
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests

Forge = Callable[[SampleResult], SampleResult]


def _thinking(s: SampleResult) -> SampleResult:
    """``s`` as a thinking model answers it: a reasoning block naming another letter, then its answer."""
    assert s.raw_output is not None
    other = "D" if s.raw_output.strip() != "D" else "A"
    reasoning = f"Maybe {other}."
    raw = f"<think>{reasoning}</think>\n\n{s.raw_output}"
    read_by = "parser" if s.prediction is not None else "none"
    return replace(s, raw_output=raw, reading=ReplyReading(s.raw_output.strip(), read_by, reasoning))


def _write(root: Path, forge: Forge, style: str | None = "think") -> Path:
    samples = [_thinking(s) for s in _records(("accuracy",), lambda s: s)]
    samples[1] = forge(samples[1])
    config = RunConfig(model="org/model", dataset=DATASET, prompts=prompt_spec(), metrics=("accuracy",))
    model = model_identity(**({} if style is None else {"reasoning_style": style}))
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model) / "results.json"


def _from_reasoning(s: SampleResult) -> SampleResult:
    """The letter of the reasoning recorded as the answer."""
    assert s.reading is not None and s.reading.reasoning is not None
    letter = s.reading.reasoning.split()[-1].rstrip(".")
    return replace(
        s, prediction=letter, correct=letter == s.answer, reading=replace(s.reading, answer_text=letter)
    )


def _judged(s: SampleResult) -> SampleResult:
    assert s.reading is not None
    return replace(s, reading=replace(s.reading, read_by="judge"))


def test_a_genuine_thinking_run_is_accepted(tmp_path: Path) -> None:
    assert _submit_dry_run(_write(tmp_path / "run", lambda s: s), tmp_path / "out") == 0


@pytest.mark.parametrize(
    ("forge", "style", "said"),
    [
        (_from_reasoning, "think", "record '000001': field 'answer_text'"),
        (_judged, "think", "record '000001': field 'read_by': read by a judge, but the run records no judge"),
        (
            lambda s: s,
            None,
            "record '000000': field 'answer_text'",
        ),  # no style: read as none, the first refused
    ],
)
def test_an_answer_its_raw_output_does_not_give_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], forge: Forge, style: str | None, said: str
) -> None:
    out = tmp_path / "out"
    assert _submit_dry_run(_write(tmp_path / "run", forge, style), out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    assert said in err, err


def _truncated_clean(s: SampleResult) -> SampleResult:
    """A reply with its closed reasoning and its answer recorded as cut inside the reasoning."""
    assert s.reading is not None
    reading = replace(s.reading, answer_text="", truncated=True, read_by="none")
    return replace(s, prediction=None, correct=False, reading=reading)


def _cut(s: SampleResult) -> SampleResult:
    """A reply genuinely cut inside its reasoning (no closing marker), recorded as truncated."""
    assert s.raw_output is not None and s.reading is not None
    raw = s.raw_output.split("</think>")[0]
    reading = replace(s.reading, answer_text="", truncated=True, read_by="none")
    return replace(s, raw_output=raw, prediction=None, correct=False, reading=reading)


def test_a_truncated_flag_on_a_reply_with_its_answer_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _submit_dry_run(_write(tmp_path / "cut", _cut), tmp_path / "ok") == 0  # a genuine cut
    capsys.readouterr()
    assert _submit_dry_run(_write(tmp_path / "run", _truncated_clean), out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    assert "record '000001': field 'truncated': true, but raw_output is not cut inside" in err, err


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda r: r.update(parsed=r["parsed"] - 1, unparsed=r["unparsed"] + 1), "field 'replies.parsed'"),
        (lambda r: r["share"].update(parser=r["share"]["parser"] - 10), "field 'replies.share.parser'"),
        (lambda r: r.update(tokens_per_correct=3.0), "field 'replies.tokens_per_correct'"),
    ],
)
def test_a_replies_section_the_samples_do_not_give_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[dict[str, Any]], None], said: str
) -> None:
    results = _write(tmp_path / "run", lambda s: s)
    obj = json.loads(results.read_text())
    edit(obj["replies"])
    results.write_text(json.dumps(obj, indent=2))
    out = tmp_path / "out"
    assert _submit_dry_run(results, out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    assert said in err and "results.json" in err, err


@pytest.mark.parametrize("style", ["bogus", "THINK", "5"])
def test_an_unknown_reasoning_style_is_refused_in_results_json_not_blamed_on_a_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], style: str
) -> None:
    results = _write(tmp_path / "run", lambda s: s, style)
    if style == "5":  # not even a string
        obj = json.loads(results.read_text())
        obj["model"]["reasoning_style"] = 5
        results.write_text(json.dumps(obj, indent=2))
    out = tmp_path / "out"
    assert _submit_dry_run(results, out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    assert (
        f"results.json: field 'model.reasoning_style': {style if style == '5' else repr(style)}; expected one of none, think"
        in err
    ), err
