"""The Space takes a full run's samples.jsonl (the CLI does), and still holds pictures to 5 MB."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from mmspubench.dataset_builder.files import MAX_JSONL_BYTES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.records import Condition, SampleResult
from mmspubench.eval.results import sample_line
from mmspubench.eval.submit.submission import MAX_RESULTS_BYTES, MAX_SAMPLES_BYTES
from mmspubench.space import handlers, live
from mmspubench.space.layout import LAUNCH_OPTIONS

from tests.eval.submit.test_submit import REVISION, make_run, set_published_split

from .local_app import launch_local

FULL_RUN_ITEMS = 2400
"""Items of the largest published split a run covers."""
LONG_TEMPLATE = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
    "Today Date: 26 Jul 2024\n\n{system}<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n<|image|>"
    "{user}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{prefix}"
)
"""One of the longer chat templates of the families the harness runs (Llama 3.2 Vision's)."""


def worst_case_sample() -> SampleResult:
    """A realistic worst-case sample of a run without views, as the evaluator records it."""

    def rendered(attribute: str) -> str:
        p = prompts.cgla_prompt(attribute)
        return LONG_TEMPLATE.format(system=p.system, user=p.user_text, prefix=p.assistant_prefix)

    attributes = [f"{'a' * 78}{i:02d}" for i in range(10)]  # curate annotate bounds attributes at 80
    class_name = "c" * 40
    conditions = tuple(
        Condition(a, "core" if i < 5 else "spurious", rendered(a), f" {class_name}", -12.345678901234567)
        for i, a in enumerate(attributes)
    )
    return SampleResult(
        id="002399",
        types=("co_occurring_objects", "perspective_angle"),
        answer="A",
        prediction="B",
        correct=False,
        raw_output="r" * 256,
        option_scores=(-1.2345678901234567,) * 4,
        class_name=class_name,
        conditions=conditions,
        cgla_min=-1.2345678901234567,
        cgla_acc=False,
    )


def worst_case_line() -> int:
    """Bytes of a realistic worst-case samples.jsonl line, as the evaluator writes it."""
    return len(sample_line(worst_case_sample(), "0123456789abcdef"))


def worst_case_views_line(mode: str) -> int:
    """Bytes of a realistic worst-case line of a run with every view in ``mode``: the line of
    :func:`worst_case_line`, its four rotations and blind answer, the letter probabilities
    (logprob) and :data:`~mmspubench.eval.intervention_names.MAX_NAMES` interventions (the four
    built-ins and counterfactuals of 30-character names), each with its reply and ten CGLs."""
    from mmspubench.eval.intervention_names import MAX_NAMES
    from mmspubench.eval.interventions import INTERVENTIONS
    from mmspubench.eval.records import Answer, InterventionAnswer, Rotation
    from mmspubench.eval.views.confounds.metrics import ROTATIONS, rotated_answer, rotation_order

    def reply() -> Answer:
        if mode == "generate":
            return Answer("B", False, "r" * 256, None)
        return Answer("B", False, None, (-1.2345678901234567,) * 4)

    base = worst_case_sample()
    names = [*INTERVENTIONS, *(f"cf:{'n' * 28}{i:02d}" for i in range(MAX_NAMES - len(INTERVENTIONS)))]
    types = ("co_occurring_objects", "perspective_angle")
    cgls = tuple(c.cgl for c in base.conditions)
    sample = replace(
        base,
        rotations=tuple(Rotation(k, rotation_order(k), rotated_answer("A", k), reply()) for k in ROTATIONS),
        blind=reply(),
        option_probs=(0.12345678901234567,) * 4 if mode == "logprob" else None,
        interventions=tuple(
            InterventionAnswer(n, types, "f" * 64, reply(), cgls, -1.2345678901234567, False) for n in names
        ),
    )
    return len(sample_line(sample, "0123456789abcdef"))


def largest_views_run() -> int:
    """Bytes of the samples.jsonl of a full run with every view, in its larger answer mode."""
    return max(worst_case_views_line(mode) for mode in ("generate", "logprob")) * FULL_RUN_ITEMS


def test_the_limit_holds_the_largest_valid_run_twice() -> None:
    assert worst_case_line() * FULL_RUN_ITEMS * 2 <= MAX_SAMPLES_BYTES
    # a full run with every view and the most interventions a run asks, in either answer mode
    # (about 65 MiB in logprob mode, 79 MiB in generate mode): the former 40 MiB limit refused both
    largest = largest_views_run()
    assert worst_case_views_line("logprob") * FULL_RUN_ITEMS > 40 * 2**20
    assert largest * 2 <= MAX_SAMPLES_BYTES <= largest * 3  # kept a limit, twice the largest run
    assert MAX_SAMPLES_BYTES <= MAX_JSONL_BYTES  # what every reader of samples.jsonl takes
    assert LAUNCH_OPTIONS["max_file_size"] >= MAX_SAMPLES_BYTES > MAX_RESULTS_BYTES
    assert live.MAX_UPLOAD_BYTES == 5 * 2**20  # pictures keep their own, smaller limit


def test_the_page_takes_a_samples_file_over_5_mb(tmp_path: Path) -> None:
    import gradio as gr

    with gr.Blocks() as demo:
        gr.File()
    base = launch_local(demo)
    try:
        url = f"{base}/gradio_api/upload"
        big = b'{"id": "x"}\n' * (6 * 2**20 // 12)
        answer = httpx.post(url, files={"files": ("samples.jsonl", big)}, timeout=60)
        assert answer.status_code == 200, answer.text
        too_big = b"x" * (int(LAUNCH_OPTIONS["max_file_size"]) + 1)
        assert httpx.post(url, files={"files": ("s.jsonl", too_big)}, timeout=60).status_code == 413
    finally:
        demo.close()


def _padded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pad: Callable[[int], str]
) -> tuple[Path, Path]:
    """A valid 20-sample run whose prompts start with ``pad(conditions in the file)`` (a long chat
    template before each prompt: still a valid run); its results.json and samples.jsonl."""
    monkeypatch.setenv("MMSPUBENCH_PUBLISHED_REVISION", REVISION)
    set_published_split(monkeypatch)
    results = make_run(tmp_path / "run")
    samples = results.parent / "samples.jsonl"
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    text = pad(len(records) * len(records[0]["conditions"]))
    for record in records:
        for condition in record["conditions"]:
            condition["prompt"] = text + condition["prompt"]
    samples.write_text("".join(json.dumps(r) + "\n" for r in records))
    return results, samples


def test_the_submit_handler_validates_a_run_over_5_mb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, samples = _padded_run(tmp_path, monkeypatch, lambda _: "<t>" * 24_000)
    assert samples.stat().st_size > 5 * 2**20
    verdict, _ = handlers.validate_upload(str(results), str(samples), "org/model")
    assert verdict.startswith("**Valid.** 20 samples")


def test_the_submit_handler_validates_a_run_of_the_size_of_a_full_interventions_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as large as 2,400 lines of 32 interventions, each under 8 MiB (the limit of one line)
    results, samples = _padded_run(
        tmp_path, monkeypatch, lambda conditions: "<t>" * (largest_views_run() // (3 * conditions) + 1)
    )
    assert samples.stat().st_size > largest_views_run()
    verdict, _ = handlers.validate_upload(str(results), str(samples), "org/model")
    assert verdict.startswith("**Valid.** 20 samples")


def test_the_results_json_of_the_most_interventions_fits_its_limit_twice(tmp_path: Path) -> None:
    from mmspubench.eval.intervention_names import MAX_NAMES
    from mmspubench.eval.interventions import INTERVENTIONS

    from tests.space import intervention_runs

    extra = (f"cf:{'n' * 28}{i:02d}" for i in range(MAX_NAMES - len(INTERVENTIONS)))
    folder = intervention_runs.write(tmp_path, "run", (*INTERVENTIONS, *extra))
    assert (folder / "results.json").stat().st_size * 2 <= MAX_RESULTS_BYTES


def test_the_submit_handler_refuses_files_over_its_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = make_run(tmp_path / "run")
    samples = results.parent / "samples.jsonl"
    from mmspubench.eval.submit import submission

    monkeypatch.setattr(submission, "MAX_SAMPLES_BYTES", 100)
    with pytest.raises(MMSpuBenchError, match=r"^upload samples\.jsonl: \d+ bytes; at most 100 are accepted"):
        handlers.validate_upload(str(results), str(samples), "org/model")
    monkeypatch.setattr(submission, "MAX_RESULTS_BYTES", 100)
    with pytest.raises(MMSpuBenchError, match=r"^upload results\.json: \d+ bytes; at most 100"):
        handlers.validate_upload(str(results), str(samples), "org/model")
    with pytest.raises(MMSpuBenchError, match="not a regular file"):
        handlers.validate_upload(str(tmp_path), str(samples), "org/model")
