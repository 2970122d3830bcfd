"""Forged intervention answers: ``submit`` re-derives each intervention's answer from what the model
produced (the argmax of its option scores in logprob mode, the parser's reading of its raw output
against the published options in generate mode), as it does the published answer."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from mmspubench.eval import interventions
from mmspubench.eval.records import Answer, InterventionAnswer, SampleResult
from PIL import Image

from tests.eval.submit.test_submit import REVISION, _submit_dry_run, published_split
from tests.eval.submit.test_submit_forgery import _letter_biased, _refused, _write
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

__all__ = ["published_split"]

METRICS = ("accuracy", "cgla", "circular", "blind", "interventions")
DIGEST = interventions.apply("grayscale", Image.new("RGB", (8, 8)))[1]
"""What eval records for grayscale on every published item of these tests (all black, 8x8)."""


def _with_grayscale(i: int, mode: str) -> SampleResult:
    """Item ``i`` answered C under grayscale (wrong: gold is A), CGLs as without it."""
    base = _letter_biased(i, mode)
    reply = (
        Answer("C", False, "C", None)
        if mode == "generate"
        else Answer("C", False, None, (-3.0, -2.0, -0.5, -4.0))
    )
    cgls = tuple(c.cgl for c in base.conditions)
    entry = InterventionAnswer(
        "grayscale", ("colorization",), DIGEST, reply, cgls, base.cgla_min, base.cgla_acc
    )
    return replace(base, interventions=(entry,))


def _run(root: Path, mode: str, forge: Callable[[SampleResult], SampleResult] = lambda s: s) -> Path:
    samples = [forge(_with_grayscale(i, mode)) for i in range(20)]
    path = _write(root, samples, mode, METRICS)
    config = json.loads(path.read_text())["config"]
    assert config["interventions"] == ["grayscale", "blur", "equalize", "noise"]  # the default
    return path


def _only_grayscale(
    root: Path, mode: str, forge: Callable[[SampleResult], SampleResult] = lambda s: s
) -> Path:
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.prompts import prompt_spec

    from tests.eval.submit.test_submit import DATASET, REVISION

    samples = [forge(_with_grayscale(i, mode)) for i in range(20)]
    config = RunConfig(
        model="org/model",
        dataset=DATASET,
        prompts=prompt_spec(),
        metrics=METRICS,
        answer_mode=mode,
        interventions=("grayscale",),
    )
    model = model_identity()
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model) / "results.json"


def _gold(sample: SampleResult) -> SampleResult:
    assert sample.interventions
    entry = sample.interventions[0]
    return replace(
        sample, interventions=(replace(entry, reply=replace(entry.reply, prediction="A", correct=True)),)
    )


@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_the_genuine_run_submits(mode: str, tmp_path: Path) -> None:
    results_path = _only_grayscale(tmp_path / "run", mode)
    g = json.loads(results_path.read_text())["interventions"]["by_intervention"]["grayscale"]
    assert g["accuracy"]["overall"] == 0.0
    assert _submit_dry_run(results_path, tmp_path / "out") == 0


@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_intervention_answers_set_to_the_gold_letter_are_refused(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path = _only_grayscale(tmp_path / "run", mode, _gold)
    assert (
        json.loads(results_path.read_text())["interventions"]["by_intervention"]["grayscale"]["accuracy"][
            "overall"
        ]
        == 100.0
    )
    reason = "reads as 'C' against the published options" if mode == "generate" else "argmax 'C'"
    _refused(
        capsys, results_path, tmp_path / "out", "field 'interventions.prediction'", "grayscale: ", reason
    )


def test_a_run_whose_entries_miss_an_asked_intervention_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the config asks every built-in (the default), the records hold grayscale only
    with pytest.raises(Exception, match="expected 'blur'"):
        _run(tmp_path / "run", "logprob")


def test_intervention_entries_in_a_run_without_the_view_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = [_with_grayscale(i, "logprob") for i in range(20)]
    results_path = _write(tmp_path / "run", [replace(s, interventions=None) for s in samples], "logprob")
    path = results_path.parent / "samples.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert samples[2].interventions is not None
    lines[2]["interventions"] = [samples[2].interventions[0].to_json()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _refused(
        capsys,
        results_path,
        tmp_path / "out",
        "record '000002': field 'interventions'",
        "did not compute interventions",
    )


@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_the_submit_tab_refuses_a_forged_intervention_answer_and_takes_the_genuine_run(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.space import handlers

    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    genuine = _only_grayscale(tmp_path / "genuine", mode)
    verdict, yaml_text = handlers.submit_verdict(
        str(genuine), str(genuine.parent / "samples.jsonl"), "org/model"
    )
    assert verdict.startswith("**Valid.** 20 samples") and "mcq_accuracy" in yaml_text
    forged = _only_grayscale(tmp_path / "forged", mode, _gold)  # grayscale accuracy 100.0, recomputed
    with pytest.raises(MMSpuBenchError, match=r"record '000000': field 'interventions\.prediction'"):
        handlers.validate_upload(str(forged), str(forged.parent / "samples.jsonl"), "org/model")
    verdict, yaml_text = handlers.submit_verdict(
        str(forged), str(forged.parent / "samples.jsonl"), "org/model"
    )
    reason = "reads as 'C' against the published options" if mode == "generate" else "argmax 'C'"
    shown = html.unescape(verdict)
    assert verdict.startswith("**Not valid.**") and yaml_text == "" and len(shown.splitlines()) == 1
    assert "samples.jsonl: record '000000': field 'interventions.prediction': grayscale: " in shown
    assert reason in shown and str(tmp_path) not in shown  # the upload's own names, not the server's folder


@pytest.mark.parametrize(
    ("field", "value"),
    [("option_scores", (-3.0, -2.0, 7.5, -4.0)), ("cgls", None)],
)
def test_an_intervention_score_that_is_no_log_probability_is_refused(
    field: str, value: tuple[float, ...] | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # +7.5 keeps C the argmax, and a CGL of +2 nats still leaves its cgla_min following from it:
    # only the bound of a log-probability (<= 0) is broken, as rotations' and blind scores are checked
    def forge(sample: SampleResult) -> SampleResult:
        assert sample.interventions
        entry = sample.interventions[0]
        if field == "option_scores":
            entry = replace(entry, reply=replace(entry.reply, option_scores=value))
        else:
            from mmspubench.eval import metrics

            cgls = (2.0, *(entry.cgls or ())[1:])
            kinds = [c.kind for c in sample.conditions]
            core = [v for v, k in zip(cgls, kinds, strict=True) if k == "core"]
            spurious = [v for v, k in zip(cgls, kinds, strict=True) if k == "spurious"]
            low = metrics.cgla_min(core, spurious, "best")
            entry = replace(entry, cgls=cgls, cgla_min=low, cgla_acc=metrics.cgla_acc(low))
        return replace(sample, interventions=(entry,))

    results_path = _only_grayscale(tmp_path / "run", "logprob", forge)
    _refused(
        capsys,
        results_path,
        tmp_path / "out",
        f"record '000000': field 'interventions[0].{field}'",
        "is not a finite log-probability",
    )


@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_a_digest_of_another_image_is_refused(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """submit re-makes each intervened image from the published split and compares digests."""

    def forge(sample: SampleResult) -> SampleResult:
        assert sample.interventions
        entry = sample.interventions[0]
        return replace(sample, interventions=(replace(entry, digest="cd" * 32),))

    results_path = _only_grayscale(tmp_path / "run", mode, forge)
    _refused(capsys, results_path, tmp_path / "out", "field 'interventions.digest'", "grayscale: cdcdcdcd")
