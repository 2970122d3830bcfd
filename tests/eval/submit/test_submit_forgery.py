"""Forged confound views: ``submit`` and the Space's Submit tab re-derive every view's answer from
what the model produced (option scores in logprob mode, raw output in generate mode), as they do
the published answer, so a run whose rotations or blind answers were edited, and its results.json
recomputed from the edited samples, is refused in one line naming the record and the field."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import Answer, Rotation, SampleResult
from mmspubench.eval.submit.submission import YAML_PATH
from mmspubench.eval.views.confounds.metrics import ROTATIONS, rotated_answer, rotation_order
from mmspubench.space import handlers

from tests.eval.submit.test_submit import DATASET, REVISION, _sample, _submit_dry_run, published_split
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests

VIEWS = ("accuracy", "cgla", "circular", "blind")
MODES = ("generate", "logprob")
Line = dict[str, Any]


def _reply(mode: str, letter: str | None, gold: str, scores: tuple[float, ...], raw: str) -> Answer:
    """An answer as the evaluator records it in ``mode``: the letter read from ``raw`` (generate)
    or the argmax of ``scores`` (logprob)."""
    if mode == "generate":
        return Answer(letter, letter == gold, raw, None)
    return Answer(letter, letter == gold, None, scores)


def _letter_biased(i: int, mode: str) -> SampleResult:
    """Item ``i`` answered by a model that always picks the letter A: right in rotation 0 only
    (circular 0), and C without the image (blind 0). Logprob scores differ per item."""
    base = _sample(i)
    if mode == "logprob":
        base = replace(
            base,
            prediction="A",
            correct=True,
            raw_output=None,
            option_scores=(-0.1 - 0.01 * i, -2.0, -3.0, -4.0),
        )
    published = Answer(base.prediction, base.correct is True, base.raw_output, base.option_scores)
    rotations = [Rotation(0, rotation_order(0), "A", published)]
    for k in ROTATIONS[1:]:
        gold = rotated_answer("A", k)
        rotations.append(
            Rotation(k, rotation_order(k), gold, _reply(mode, "A", gold, (-0.2, -2.5, -3.0, -4.0), "A"))
        )
    blind = _reply(mode, "C", "A", (-3.0, -2.0, -0.5, -4.0), "C")
    return replace(base, rotations=tuple(rotations), blind=blind)


def _write(root: Path, samples: list[SampleResult], mode: str, metrics: tuple[str, ...] = VIEWS) -> Path:
    """A run folder of ``samples`` with results.json recomputed from them and every line stamped:
    what a forger who edits the samples and reruns the writers gets."""
    config = RunConfig(
        model="org/model", dataset=DATASET, prompts=prompt_spec(), metrics=metrics, answer_mode=mode
    )
    model = model_identity()
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model) / "results.json"


def _run(root: Path, mode: str, forge: Callable[[SampleResult], SampleResult] = lambda s: s) -> Path:
    return _write(root, [forge(_letter_biased(i, mode)) for i in range(20)], mode)


def _edit_line(results_path: Path, index: int, edit: Callable[[Line], None]) -> None:
    """Edit line ``index`` of samples.jsonl as JSON, results.json untouched (NaN written as JSON's NaN)."""
    path = results_path.parent / "samples.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    edit(lines[index])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _refused(capsys: pytest.CaptureFixture[str], results_path: Path, out: Path, *needles: str) -> str:
    assert _submit_dry_run(results_path, out) == 2
    err = capsys.readouterr().err
    # one line (the progress bar of the first read of the published split aside)
    lines = [line for line in err.splitlines() if "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    for needle in needles:
        assert needle in err, err
    return err


def _upload(results_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The Space's Submit tab on the run's two files."""
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    return handlers.validate_upload(
        str(results_path), str(results_path.parent / "samples.jsonl"), "org/model"
    )


def _gold_rotations(sample: SampleResult) -> SampleResult:
    """Every rotation's letter set to its gold one, the scores and raw output left as produced."""
    assert sample.rotations is not None
    forged = [
        replace(r, reply=replace(r.reply, prediction=r.answer, correct=True)) for r in sample.rotations[1:]
    ]
    return replace(sample, rotations=(sample.rotations[0], *forged))


def _gold_blind(sample: SampleResult) -> SampleResult:
    assert sample.blind is not None
    return replace(sample, blind=replace(sample.blind, prediction="A", correct=True))


@pytest.mark.parametrize("mode", MODES)
def test_the_genuine_run_submits_its_own_figures(mode: str, tmp_path: Path) -> None:
    results_path = _run(tmp_path / "run", mode)
    results = json.loads(results_path.read_text())
    assert (results["circular"]["accuracy"], results["blind"]["accuracy"]) == (0.0, 0.0)
    assert _submit_dry_run(results_path, tmp_path / "out") == 0
    entries = parse_eval_result_entries(yaml.safe_load((tmp_path / "out" / YAML_PATH).read_text()))
    assert {e.task_id: e.value for e in entries}["blind_accuracy"] == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_rotation_answers_set_to_the_gold_letter_are_refused(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results_path = _run(tmp_path / "run", mode, _gold_rotations)
    assert json.loads(results_path.read_text())["circular"]["accuracy"] > 0.0  # the forged figure
    reason = "reads as 'A' against the options as rotated" if mode == "generate" else "argmax 'A'"
    _refused(
        capsys, results_path, tmp_path / "out", "field 'rotations.prediction'", "rotation 1: 'B'", reason
    )
    with pytest.raises(MMSpuBenchError, match=r"record '000000': field 'rotations\.prediction'"):
        _upload(results_path, monkeypatch)
    verdict, yaml_text = handlers.submit_verdict(
        str(results_path), str(results_path.parent / "samples.jsonl"), "org/model"
    )
    assert verdict.startswith("**Not valid.**") and yaml_text == ""
    assert "field 'rotations.prediction'" in html.unescape(verdict)


@pytest.mark.parametrize("mode", MODES)
def test_blind_answers_set_to_the_gold_letter_are_refused(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results_path = _run(tmp_path / "run", mode, _gold_blind)
    assert json.loads(results_path.read_text())["blind"]["accuracy"] == 100.0  # blind_accuracy 1.0
    reason = "reads as 'C' against the published options" if mode == "generate" else "argmax 'C'"
    _refused(capsys, results_path, tmp_path / "out", "record '000000': field 'blind.prediction'", reason)
    with pytest.raises(MMSpuBenchError, match=r"field 'blind\.prediction'"):
        _upload(results_path, monkeypatch)


def test_a_rotation_read_against_the_published_options_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # rotation 1 shows option 'opt a' at B: its raw output 'opt a' names B there, not A
    def edit(sample: SampleResult) -> SampleResult:
        assert sample.rotations is not None
        r = sample.rotations[1]
        forged = replace(r, reply=Answer("A", False, "opt a", None))
        return replace(sample, rotations=(sample.rotations[0], forged, *sample.rotations[2:]))

    results_path = _run(tmp_path / "run", "generate", edit)
    _refused(capsys, results_path, tmp_path / "out", "rotation 1: 'A' but its raw_output reads as 'B'")


def test_rotations_copied_from_another_item_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # items 3 and 4 share their gold letter and their answer A, so orders, gold letters and
    # predictions all match; the copied rotation 0 is item 4's reply, not item 3's own
    samples = [_letter_biased(i, "logprob") for i in range(20)]
    samples[3] = replace(samples[3], rotations=samples[4].rotations)
    results_path = _write(tmp_path / "run", samples, "logprob")
    _refused(
        capsys,
        results_path,
        tmp_path / "out",
        "record '000003': field 'rotations'",
        "rotation 0 is not the published answer",
    )


def _rotation_scores(value: Any) -> Callable[[Line], None]:
    return lambda line: line["rotations"][2]["option_scores"].__setitem__(1, value)


def _blind_scores(value: Any) -> Callable[[Line], None]:
    return lambda line: line["blind"]["option_scores"].__setitem__(0, value)


BAD_SCORES = [float("nan"), float("inf"), float("-inf"), 0.5, 1e308, 10**400]
"""Not a finite log-probability: NaN, the infinities (``1e999`` reads as one), positive, huge."""


@pytest.mark.parametrize("value", BAD_SCORES, ids=["nan", "inf", "-inf", "positive", "1e308", "10**400"])
@pytest.mark.parametrize(
    ("where", "field"),
    [(_rotation_scores, "rotations[2].option_scores"), (_blind_scores, "blind.option_scores")],
)
def test_view_scores_that_are_no_log_probability_are_refused(
    value: Any, where: Any, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = _run(tmp_path / "run", "logprob")
    _edit_line(results_path, 5, where(value))
    _refused(
        capsys,
        results_path,
        tmp_path / "out",
        f"record '000005': field '{field}'",
        "not a finite log-probability",
    )


@pytest.mark.parametrize("value", [True, "-1.0", None, [-1.0]])
def test_view_scores_that_are_not_numbers_are_refused(
    value: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = _run(tmp_path / "run", "logprob")
    _edit_line(results_path, 5, _rotation_scores(value))
    _refused(
        capsys, results_path, tmp_path / "out", "line 6", "record '000005'", "'rotations[2].option_scores'"
    )


@pytest.mark.parametrize("letter", ["b", "E", "", "AB"])
@pytest.mark.parametrize("field", ["rotations", "blind"])
def test_a_view_letter_outside_a_to_d_is_one_line(
    letter: str,
    field: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    results_path = _run(tmp_path / "run", "logprob")

    def edit(line: Line) -> None:
        target = line["rotations"][1] if field == "rotations" else line["blind"]
        target["prediction"] = letter

    _edit_line(results_path, 2, edit)
    _refused(
        capsys, results_path, tmp_path / "out", f"field '{field}.prediction'", "is not A, B, C, D or null"
    )
    with pytest.raises(MMSpuBenchError, match=rf"field '{field}\.prediction'"):
        _upload(results_path, monkeypatch)


@pytest.mark.parametrize(
    "value",
    [5, "ABCD", [1, 2, 3, 4], {"rotation": 0}, [[0, 1, 2, 3]] * 4, [None] * 4],
    ids=["number", "string", "numbers", "object", "lists", "nulls"],
)
def test_rotations_that_are_not_a_list_of_objects_are_one_line(
    value: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results_path = _run(tmp_path / "run", "generate")
    _edit_line(results_path, 3, lambda line: line.update(rotations=value))
    _refused(
        capsys, results_path, tmp_path / "out", "samples.jsonl: line 4", "record '000003'", "field 'rotations"
    )
    with pytest.raises(MMSpuBenchError, match=r"^samples\.jsonl: line 4: .*field 'rotations"):
        _upload(results_path, monkeypatch)


def _shifts(*shifts: int) -> Callable[[Line], None]:
    def edit(line: Line) -> None:
        line["rotations"] = [line["rotations"][k] for k in shifts]

    return edit


def _extra_key(line: Line) -> None:
    line["rotations"][2]["options"] = ["opt a", "opt b", "opt c", "opt d"]


def _float_shift(line: Line) -> None:
    line["rotations"][0]["rotation"] = -0.0


def _bool_shift(line: Line) -> None:
    line["rotations"][1]["rotation"] = True


def _order_text(line: Line) -> None:
    line["rotations"][1]["order"] = "3012"


def _scores_in_generate(line: Line) -> None:
    line["rotations"][3]["option_scores"] = [-1.0, -2.0, -3.0, -4.0]


def _no_raw_output(line: Line) -> None:
    line["blind"]["raw_output"] = None


def _no_rotations(line: Line) -> None:
    del line["rotations"]


@pytest.mark.parametrize(
    ("edit", "needles"),
    [
        (_shifts(0, 1, 1, 3), ("field 'rotations'", "shifts [0, 1, 1, 3]")),
        (_shifts(0, 1, 2), ("field 'rotations' holds 3 entries",)),
        (_shifts(*[k % 4 for k in range(100_000)]), ("line 8",)),  # the line is over the line limit
        (_shifts(*[1] * 40_000), ("holds 40000 entries",)),
        (_extra_key, ("field 'rotations[2]': unknown key 'options'",)),
        (_float_shift, ("field 'rotations[0].rotation' must be an integer, got -0.0",)),
        (_bool_shift, ("field 'rotations[1].rotation' must be an integer, got True",)),
        (_order_text, ("field 'rotations[1].order' must be a list of integers",)),
        (_scores_in_generate, ("field 'rotations.option_scores'", "rotation 3: set in a generate-mode run")),
        (_no_raw_output, ("field 'blind.raw_output'", "missing in a generate-mode run")),
        (_no_rotations, ("field 'rotations'", "missing in a circular run")),
    ],
    ids=[
        "duplicated",
        "missing",
        "100k",
        "40k",
        "extra-key",
        "float-shift",
        "bool-shift",
        "order-text",
        "scores-in-generate",
        "no-raw-output",
        "no-rotations",
    ],
)
def test_malformed_rotation_records_are_one_line(
    edit: Callable[[Line], None], needles: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = _run(tmp_path / "run", "generate")
    _edit_line(results_path, 7, edit)
    _refused(capsys, results_path, tmp_path / "out", "samples.jsonl", *needles)


@pytest.mark.parametrize(
    ("metrics", "field"),
    [(("accuracy", "cgla", "circular"), "blind"), (("accuracy", "cgla", "blind"), "rotations")],
)
def test_a_view_record_in_a_run_that_did_not_ask_for_it_is_refused(
    metrics: tuple[str, ...], field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = _write(
        tmp_path / "run", [_letter_biased(i, "generate") for i in range(20)], "generate", metrics
    )
    _refused(capsys, results_path, tmp_path / "out", f"field '{field}': set, but the run did not compute")


def test_negative_zero_scores_are_log_probabilities(tmp_path: Path) -> None:
    def zero(sample: SampleResult) -> SampleResult:  # -0.0 is log 1: the argmax is still A
        assert sample.rotations is not None
        r = sample.rotations[2]
        forged = replace(r, reply=replace(r.reply, option_scores=(-0.0, -1.0, -2.0, -3.0)))
        return replace(sample, rotations=(*sample.rotations[:2], forged, sample.rotations[3]))

    results_path = _run(tmp_path / "run", "logprob", zero)
    assert _submit_dry_run(results_path, tmp_path / "out") == 0


def test_an_edited_circular_figure_with_the_samples_untouched_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results_path = _run(tmp_path / "run", "logprob")
    results = json.loads(results_path.read_text())
    results["circular"]["accuracy"] = 100.0
    results_path.write_text(json.dumps(results))
    _refused(capsys, results_path, tmp_path / "out", "field 'circular.accuracy'", "disagrees")
    with pytest.raises(MMSpuBenchError, match=r"circular\.accuracy"):
        _upload(results_path, monkeypatch)
