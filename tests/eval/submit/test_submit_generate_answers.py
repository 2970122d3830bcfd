"""In a generate-mode run every recorded answer is what the parser reads from its own raw output,
the published answer's and every view's (rotations, blind, interventions): a raw output edited to
a text that reads as no answer ("The answer is definitely A") or as another letter, beside the
recorded letter, is refused by ``submit`` and the Space's Submit tab in one line naming the file,
the record and the field, also in a run whose results.json names no ``accuracy`` (which ``eval``
never writes, but which results.json's config, read back without the option checks, can say)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import Answer, SampleResult

from tests.eval.submit.test_submit import DATASET, REVISION, _submit_dry_run, published_split
from tests.eval.submit.test_submit_forgery import _upload
from tests.eval.submit.test_submit_interventions import _with_grayscale
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests

NO_ANSWER = "The answer is definitely A"
"""Read as no answer: after ``The answer is``, ``definitely A`` is no letter form and no option."""
Forge = Callable[[SampleResult], SampleResult]


def _write(root: Path, samples: list[SampleResult], metrics: tuple[str, ...]) -> Path:
    """A generate-mode run of ``samples`` made consistent again (results.json recomputed, every
    line stamped) as a forger who reran the writers would make it; returns results.json."""
    interventions = ("grayscale",) if "interventions" in metrics else ()
    config = RunConfig(
        model="org/model",
        dataset=DATASET,
        prompts=prompt_spec(),
        metrics=metrics,
        answer_mode="generate",
        **({"interventions": interventions} if interventions else {}),
    )
    model = model_identity()
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model) / "results.json"


def _records(metrics: tuple[str, ...], forge: Forge) -> list[SampleResult]:
    """Twenty genuine samples with the parts of ``metrics`` only, item 1 forged by ``forge``."""
    out = []
    for i in range(20):
        s = _with_grayscale(i, "generate")  # rotations answer A, blind C, grayscale C: raw = letter
        s = replace(
            s,
            rotations=s.rotations if "circular" in metrics else None,
            blind=s.blind if "blind" in metrics else None,
            interventions=s.interventions if "interventions" in metrics else None,
        )
        if "accuracy" not in metrics:  # as eval writes a run that asks no published answer
            s = replace(s, prediction=None, correct=None, raw_output=None)
            s = replace(s, rotations=None)  # circular needs the published answer as its rotation 0
        if "cgla" not in metrics:
            shown = tuple(replace(e, cgls=None, cgla_min=None, cgla_acc=None) for e in s.interventions or ())
            s = replace(s, conditions=(), cgla_min=None, cgla_acc=None, interventions=shown or None)
        out.append(forge(s) if i == 1 else s)
    return out


def _rotation(raw: str, letter: str) -> Forge:
    """Rotation 1 recorded as ``letter``, its raw output ``raw``."""

    def forge(s: SampleResult) -> SampleResult:
        assert s.rotations is not None
        r = s.rotations[1]
        reply = Answer(letter, letter == r.answer, raw, None)
        return replace(s, rotations=(s.rotations[0], replace(r, reply=reply), *s.rotations[2:]))

    return forge


def _blind(raw: str, letter: str) -> Forge:
    return lambda s: replace(s, blind=Answer(letter, letter == s.answer, raw, None))


def _intervention(raw: str, letter: str) -> Forge:
    def forge(s: SampleResult) -> SampleResult:
        assert s.interventions
        entry = s.interventions[0]
        reply = Answer(letter, letter == s.answer, raw, None)
        return replace(s, interventions=(replace(entry, reply=reply),))

    return forge


CASES = [
    # (metrics, forge, field, what the raw output reads as)
    (("accuracy", "circular"), _rotation(NO_ANSWER, "B"), "rotations.prediction", "None"),
    (("accuracy", "circular"), _rotation("C", "B"), "rotations.prediction", "'C'"),
    (("accuracy", "blind"), _blind(NO_ANSWER, "A"), "blind.prediction", "None"),
    (("accuracy", "blind"), _blind("D", "A"), "blind.prediction", "'D'"),
    (("accuracy", "interventions"), _intervention(NO_ANSWER, "A"), "interventions.prediction", "None"),
    (("accuracy", "interventions"), _intervention("B", "A"), "interventions.prediction", "'B'"),
    # results.json's config without accuracy: eval never writes it, the answers are checked all the same
    (("blind",), _blind(NO_ANSWER, "A"), "blind.prediction", "None"),
    (("cgla", "blind"), _blind("D", "A"), "blind.prediction", "'D'"),
]


@pytest.mark.parametrize(
    ("metrics", "forge", "field", "reads"), CASES, ids=[f"{','.join(c[0])}-{c[3]}" for c in CASES]
)
def test_an_answer_its_raw_output_does_not_give_is_refused(
    metrics: tuple[str, ...],
    forge: Forge,
    field: str,
    reads: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    genuine = _write(tmp_path / "genuine", _records(metrics, lambda s: s), metrics)
    assert _submit_dry_run(genuine, tmp_path / "genuine-out") == 0
    capsys.readouterr()
    results_path = _write(tmp_path / "run", _records(metrics, forge), metrics)
    out = tmp_path / "out"
    assert _submit_dry_run(results_path, out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    assert "samples.jsonl: record '000001': " in err and f"field '{field}'" in err, err
    assert f"its raw_output reads as {reads}" in err, err
    with pytest.raises(MMSpuBenchError, match=rf"record '000001': field '{field}'"):
        _upload(results_path, monkeypatch)
