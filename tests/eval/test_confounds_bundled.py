"""The confound views on the bundled model through ``mmspubench eval``: results.json follows from
samples.jsonl, and every rotation equals the rotated item scored plainly on its own."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.defaults import default_dataset_dir
from mmspubench.dataset_builder.load import load_pinned
from mmspubench.eval import data, prompts, results
from mmspubench.eval.backends.transformers.loading import load_model
from mmspubench.eval.bundled import bundled_model_dir
from mmspubench.eval.config import RunConfig
from mmspubench.eval.runner import evaluate_items
from mmspubench.eval.views.confounds import metrics as metrics_confounds

LIMIT = 8


@pytest.mark.parametrize(("mode", "blind_image"), [("logprob", "none"), ("generate", "grey")])
def test_bundled_rotations_recompute_and_equal_plain(tmp_path: Path, mode: str, blind_image: str) -> None:
    out = tmp_path / "run"
    metrics = "accuracy,circular,blind" + (",calibration" if mode == "logprob" else "")
    argv = ["eval", "--metrics", metrics, "--answer-mode", mode, "--blind-image", blind_image]
    assert main([*argv, "--limit", str(LIMIT), "--out", str(out), "--no-progress"]) == 0
    written = json.loads((out / "results.json").read_text())
    samples, _ = results.read_samples(out / "samples.jsonl")
    config = RunConfig.from_json(written["config"])
    again = results.recompute(samples, config, [s.id for s in samples])
    assert {k: written[k] for k in again} == again
    assert set(again) >= {"circular", "blind"}
    # each rotation, asked plainly as its own item, gives the same answer
    ds, _ = load_pinned(str(default_dataset_dir()), "test")
    items = data.load_items(ds, LIMIT, "bundled")
    model = load_model(bundled_model_dir(), scorer="plain")
    plain_config = dataclasses.replace(
        config, metrics=("accuracy",), prompts=prompts.prompt_spec(), blind_image="none"
    )
    rotated = [
        dataclasses.replace(
            item,
            options=list(metrics_confounds.rotated_options(item.options, k)),
            answer=metrics_confounds.rotated_answer(item.answer, k),
        )
        for item in items
        for k in metrics_confounds.ROTATIONS
    ]
    plain = evaluate_items(model, rotated, plain_config)
    by_id = {s.id: s for s in samples}
    for index, result in enumerate(plain):
        rotation = by_id[result.id].rotations[index % 4]
        assert rotation.reply.prediction == result.prediction
        assert rotation.reply.correct == result.correct
        if mode == "logprob":
            assert rotation.reply.option_scores == pytest.approx(result.option_scores, abs=1e-4)
        else:
            assert rotation.reply.raw_output == result.raw_output


def test_text_only_prompt_has_no_image_and_scores_plainly() -> None:
    from mmspubench.eval.backends.transformers import scoring
    from mmspubench.eval.protocol import ScoreRequest

    model = load_model(bundled_model_dir(), scorer="fast")
    ds, _ = load_pinned(str(default_dataset_dir()), "test")
    item = data.load_items(ds, 1, "bundled")[0]
    prompt = prompts.mcq_prompt(item.question, item.options, "logprob")
    text = model.render_text(prompt)
    assert model.processor.image_token not in text and model.processor.image_token in model.render(prompt)
    requests = [ScoreRequest(None, text, c) for c in prompts.letter_continuations()]
    with_image = [
        ScoreRequest(item.pil_image, model.render(prompt), c) for c in prompts.letter_continuations()
    ]
    mixed = model.score([*requests, *with_image])
    assert mixed[:4] == scoring.score_plain(model, requests)
    assert mixed[4:] == pytest.approx(scoring.score_plain(model, with_image), abs=1e-4)
    assert mixed[:4] != pytest.approx(mixed[4:], abs=1e-3)  # the image changes the scores
    # The plain scorer (the fast one's check) batches text-only requests apart from those with an
    # image, in either order: a batch of both once scored the image ones without their pixels.
    assert scoring.score_plain(model, [*requests, *with_image]) == pytest.approx(mixed, abs=1e-4)
    assert scoring.score_plain(model, [*with_image, *requests]) == pytest.approx(
        [*mixed[4:], *mixed[:4]], abs=1e-4
    )
    answers = model.generate([None, item.pil_image], [text, model.render(prompt)], 4)
    assert len(answers) == 2 and all(isinstance(a.text, str) for a in answers)
