"""results.json's confound sections (``circular``, ``blind``, ``calibration``) from samples.jsonl.

Each section is rebuilt from the per-item records alone, after checking that every record
follows from itself (rotation orders and gold letters, ``correct`` flags, probabilities from
scores): a hand-edited line is refused naming the record and the field, never summarised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.records import Answer, SampleResult
from mmspubench.eval.views.confounds import calibration as metrics_calibration
from mmspubench.eval.views.confounds import metrics as metrics_confounds

if TYPE_CHECKING:
    from mmspubench.eval.config import RunConfig


def _bad(sample: SampleResult, field: str, why: str) -> MMSpuBenchError:
    return MMSpuBenchError(f"samples: record {sample.id!r}: field {field!r}: {why}")


def letter_fault(answer: Answer) -> str | None:
    """Why a view's ``prediction`` is not an option letter as the evaluator writes one (A-D in
    upper case, or ``null`` for unparsed), or ``None``: a letter the summaries cannot place (``b``,
    ``E``) is refused, never counted as some option."""
    if answer.prediction is None or answer.prediction in ANSWER_LETTERS:
        return None
    return f"{answer.prediction[:40]!r} is not A, B, C, D or null"


def logprob_fault(prediction: str | None, scores: tuple[float, ...] | None) -> tuple[str, str] | None:
    """``(field, why)`` when ``prediction`` is not the logprob answer of ``scores`` (their argmax,
    the first of tied letters, as ``eval`` picks it), else ``None``."""
    from mmspubench.eval.asking import argmax_letter

    if scores is None or len(scores) != len(ANSWER_LETTERS):
        return "option_scores", f"{0 if scores is None else len(scores)} scores; expected 4"
    best = argmax_letter(scores)
    if prediction != best:
        return "prediction", f"{prediction!r} is not the argmax {best!r} of option_scores"
    return None


def answer_fault(answer: Answer, field: str, label: str, mode: str) -> tuple[str, str] | None:
    """``(field, why)`` where one view's answer does not follow from what the model produced, as the
    published answer does: in logprob mode its four option scores (the argmax), in generate mode
    its raw output (the parser's reading, checked against the published options by ``submit``);
    else ``None``. ``field`` is the part's key, ``label`` prefixes the reason (``rotation 1: ``)."""
    fault = letter_fault(answer)
    if fault:
        return f"{field}.prediction", f"{label}{fault}"
    # Each mode records one kind of output: the scores (logprob) or the generated text.
    kept, other = ("option_scores", "raw_output") if mode == "logprob" else ("raw_output", "option_scores")
    if getattr(answer, kept) is None:
        return f"{field}.{kept}", f"{label}missing in a {mode}-mode run"
    if getattr(answer, other) is not None:
        return f"{field}.{other}", f"{label}set in a {mode}-mode run"
    wrong = logprob_fault(answer.prediction, answer.option_scores) if mode == "logprob" else None
    if wrong:
        return f"{field}.{wrong[0]}", f"{label}{wrong[1]}"
    return None


def _rotations(sample: SampleResult) -> list[metrics_confounds.RotationAnswer]:
    if sample.rotations is None:
        raise _bad(sample, "rotations", "missing in a circular run")
    if tuple(r.rotation for r in sample.rotations) != metrics_confounds.ROTATIONS:
        raise _bad(sample, "rotations", f"expected rotations {list(metrics_confounds.ROTATIONS)} in order")
    out = []
    for r in sample.rotations:
        fault = letter_fault(r.reply)
        if fault:
            raise _bad(sample, "rotations.prediction", f"rotation {r.rotation}: {fault}")
        if r.order != metrics_confounds.rotation_order(r.rotation):
            raise _bad(sample, "rotations.order", f"{list(r.order)} is not rotation {r.rotation}")
        if r.answer != metrics_confounds.rotated_answer(sample.answer, r.rotation):
            raise _bad(
                sample, "rotations.answer", f"{r.answer!r} is not the gold letter of rotation {r.rotation}"
            )
        if r.reply.correct != (r.reply.prediction == r.answer):
            raise _bad(sample, "rotations.correct", "does not follow from prediction and answer")
        out.append(metrics_confounds.RotationAnswer(r.rotation, r.answer, r.reply.prediction))
    if out[0].prediction != sample.prediction:
        raise _bad(sample, "rotations", "rotation 0 is not the published answer")
    return out


def circular(ordered: Sequence[SampleResult], seed: int) -> dict[str, Any]:
    """results.json ``circular`` (checked records)."""
    rotations = [_rotations(s) for s in ordered]
    return metrics_confounds.circular_summary([s.types for s in ordered], rotations, seed)


def blind(ordered: Sequence[SampleResult], config: RunConfig) -> dict[str, Any]:
    """results.json ``blind`` (checked records)."""
    for s in ordered:
        if s.blind is None:
            raise _bad(s, "blind", "missing in a blind run")
        fault = letter_fault(s.blind)
        if fault:
            raise _bad(s, "blind.prediction", fault)
        if s.blind.correct != (s.blind.prediction == s.answer):
            raise _bad(s, "blind.correct", "does not follow from prediction and answer")
    return metrics_confounds.blind_summary(
        [s.id for s in ordered],
        [s.types for s in ordered],
        [bool(s.correct) for s in ordered],
        [bool(s.blind.correct) for s in ordered if s.blind is not None],
        config.seed,
        config.blind_image,
        sum(1 for s in ordered if s.blind is not None and s.blind.prediction is None),
    )


def calibration(ordered: Sequence[SampleResult], seed: int) -> dict[str, Any]:
    """results.json ``calibration`` (probabilities checked against the letter scores)."""
    probs = []
    for s in ordered:
        if s.option_scores is None or s.option_probs is None:
            raise _bad(s, "option_probs", "missing in a calibration run")
        if tuple(s.option_probs) != metrics_calibration.option_probs(s.option_scores):
            raise _bad(s, "option_probs", "is not the softmax of option_scores")
        probs.append(s.option_probs)
    return metrics_calibration.calibration_summary(probs, [s.answer for s in ordered], seed)
