"""Prompt variants: their texts, the reasoning parser, the run identity, and two real runs compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import config, prompts
from mmspubench.eval.protocol import ChatPrompt
from mmspubench.eval.replies.parse import parse_final_answer

from .fakes import FakeModel, make_dataset

OPTIONS = ("a red car", "a blue bus", "a green bike", "a yellow taxi")
QUESTION = "Which object is shown?"
LINES = "A. a red car\nB. a blue bus\nC. a green bike\nD. a yellow taxi"


def test_each_variant_renders_its_hand_written_texts() -> None:
    standard = prompts.mcq_prompt(QUESTION, OPTIONS, "generate")
    assert standard == ChatPrompt(
        system="You are a helpful assistant.",
        user_text=f"{QUESTION}\n{LINES}\nAnswer with the option's letter from the given choices directly.",
        assistant_prefix="",
    )
    focus = prompts.mcq_prompt(QUESTION, OPTIONS, "logprob", "core-focus")
    assert focus.system == (
        "You are a helpful assistant. Identify an object by its intrinsic parts and shape only. Do not "
        "rely on the background, colour, texture, lighting or surrounding context: they can be misleading."
    )
    assert (focus.user_text, focus.assistant_prefix) == (standard.user_text, "Answer:")
    reasoning = prompts.mcq_prompt(QUESTION, OPTIONS, "generate", "reasoning")
    assert reasoning.system == standard.system
    assert reasoning.user_text == (
        f"{QUESTION}\n{LINES}\nThink step by step about the object's own parts and shape, then end with "
        "a last line of the form 'Answer: <letter>'."
    )
    hint = prompts.mcq_prompt(
        QUESTION, OPTIONS, "generate", "attribute-hint", ("four wheels", "a windscreen")
    )
    assert hint.user_text == (
        f"{QUESTION}\n{LINES}\nHint: the object has these features: four wheels; a windscreen.\n"
        "Answer with the option's letter from the given choices directly."
    )
    with pytest.raises(ValueError, match="core attributes"):
        prompts.mcq_prompt(QUESTION, OPTIONS, "generate", "attribute-hint")
    # g(t) keeps its texts; only --cgla-prompt-variant core-focus changes its system turn
    assert prompts.cgla_prompt("red", "core-focus") == ChatPrompt(
        focus.system, prompts.cgla_prompt("red").user_text, "The object is:", scored=True
    )


def test_standard_spec_is_unchanged_and_variants_add_a_versioned_section() -> None:
    spec = prompts.prompt_spec()
    assert list(spec) == ["version", "system", "cgla", "mcq"] and spec["version"] == "1"
    assert prompts.prompt_spec("standard", "standard") == spec
    focus = prompts.prompt_spec("core-focus")
    assert focus["mcq_variant"]["name"] == "core-focus" and focus["mcq_variant"]["version"] == "1"
    assert "cgla_variant" not in focus and focus["cgla"] == spec["cgla"]
    assert prompts.prompt_spec("attribute-hint")["mcq_variant"]["ceiling"] is True
    assert (
        prompts.prompt_spec(cgla_variant="core-focus")["cgla_variant"]["system"] == prompts.CORE_FOCUS_SYSTEM
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A seems likely, but the shape says C.\nAnswer: C", "C"),  # the final answer wins
        ("Answer: A\nOn reflection the wheels point elsewhere.\nAnswer: B.", "B"),  # the last one
        ("B has wheels. **Answer:** (D)", "D"),
        ("answer: a blue bus", "B"),  # the option's text, as parse_answer reads it
        ("I think it is B", None),  # no Answer: line: unparsed, not the letter in the reasoning
        ("Answer: C because of the wheels", None),
        ("Answer: E", None),
        ("Answer:", None),  # cut off by --max-new-tokens
        ("", None),
    ],
)
def test_reasoning_parser_reads_the_final_answer_line(text: str, expected: str | None) -> None:
    assert parse_final_answer(text, OPTIONS) == expected


class Recording(FakeModel):
    """Records the contexts and the generation length the runner asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts: list[str] = []
        self.lengths: list[int] = []

    def generate(self, images: Any, contexts: Any, max_new_tokens: int) -> list[str]:
        self.contexts += contexts
        self.lengths.append(max_new_tokens)
        return ["Letter A at first.\nAnswer: B" for _ in contexts]


def test_runner_uses_the_variant_prompt_parser_and_length() -> None:
    from mmspubench.dataset_builder.schema import Item
    from mmspubench.eval.runner import evaluate_items

    items = [Item.from_row(row, "fixture") for row in make_dataset(2)]
    model = Recording()
    run = config.RunConfig(metrics=("accuracy",), prompt_variant="reasoning").validate()
    out = evaluate_items(model, items, run)
    assert [s.prediction for s in out] == ["B", "B"] and model.lengths == [512]
    assert all("Think step by step" in c for c in model.contexts)
    hinted = Recording()
    evaluate_items(hinted, items, config.RunConfig(metrics=("accuracy",), prompt_variant="attribute-hint"))
    assert (
        f"Hint: the object has these features: {'; '.join(items[1].core_attributes)}." in hinted.contexts[1]
    )
    assert evaluate_items(Recording(), items, config.RunConfig(metrics=("accuracy",)))[0].prediction is None


def test_variant_options_are_checked_and_old_results_read_as_standard() -> None:
    with pytest.raises(MMSpuBenchError, match="--prompt-variant reasoning needs --answer-mode generate"):
        config.RunConfig(prompt_variant="reasoning", answer_mode="logprob").validate()
    with pytest.raises(MMSpuBenchError, match="--prompt-variant 'x': unknown"):
        config.RunConfig(prompt_variant="x").validate()
    with pytest.raises(MMSpuBenchError, match="--cgla-prompt-variant 'reasoning': unknown"):
        config.RunConfig(cgla_prompt_variant="reasoning").validate()
    run = config.RunConfig(model="m", dataset="d")
    old = {k: v for k, v in run.to_json().items() if k not in ("prompt_variant", "cgla_prompt_variant")}
    assert config.RunConfig.from_json(old).prompt_variant == "standard"
    assert "prompt_variant" not in run.identity()  # standard runs keep the identity of older releases
    assert config.RunConfig(prompt_variant="core-focus").identity()["prompt_variant"] == "core-focus"


# Two real runs of the bundled model ------------------------------------------------------------

LIMIT = 12
RESAMPLES = 300


@pytest.fixture(scope="module")
def variant_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    pytest.importorskip("torch")
    from mmspubench.cli import main

    root = tmp_path_factory.mktemp("variants")
    a, b = root / "standard", root / "core-focus"
    common = ["eval", "--limit", str(LIMIT), "--no-progress"]
    assert main([*common, "--out", str(a)]) == 0
    assert main([*common, "--prompt-variant", "core-focus", "--out", str(b)]) == 0
    out = root / "cmp.json"
    assert main(["compare", str(a), str(b), "--json", str(out), "--resamples", str(RESAMPLES)]) == 0
    return a, b, json.loads(out.read_text())


def test_two_variants_compare_figures_follow_from_the_samples(variant_pair: tuple[Path, Path, dict]) -> None:
    from mmspubench.dataset_builder.schema import TYPE_ABBREV

    from .compare.test_compare_bundled import _ci, _p, _samples

    a_dir, b_dir, doc = variant_pair
    results = json.loads((b_dir / "results.json").read_text())["config"]
    assert (results["prompt_variant"], results["cgla_prompt_variant"]) == ("core-focus", "standard")
    assert results["prompts"] == prompts.prompt_spec("core-focus") and results["max_new_tokens"] == 16
    assert (doc["a"]["variant"], doc["b"]["variant"]) == ("standard", "core-focus")
    from mmspubench.eval.commands import _summary

    assert _summary(json.loads((b_dir / "results.json").read_text()), b_dir).startswith(
        "prompt variant core-focus; accuracy "
    )  # what eval prints at the end
    a, b = _samples(a_dir), _samples(b_dir)
    assert doc["n"] == len(a) == LIMIT
    differed = 0
    for group in doc["groups"]:
        ids = [
            i
            for i in sorted(a)
            if group["group"] == "Overall" or group["group"] in {TYPE_ABBREV[t] for t in a[i]["types"]}
        ]
        assert group["n"] == len(ids)
        if not ids:
            continue
        got = group["accuracy"]
        x, y = [100.0 * a[i]["correct"] for i in ids], [100.0 * b[i]["correct"] for i in ids]
        only_a = sum(a[i]["correct"] and not b[i]["correct"] for i in ids)
        only_b = sum(b[i]["correct"] and not a[i]["correct"] for i in ids)
        assert (got["a"], got["b"]) == (pytest.approx(sum(x) / len(x)), pytest.approx(sum(y) / len(y)))
        assert (got["only_a"], got["only_b"]) == (only_a, only_b)
        assert got["p_value"] == pytest.approx(_p(only_a, only_b), rel=1e-12)
        assert got["ci95"] == pytest.approx(_ci(x, y, 0), abs=1e-9)
        differed += sum(a[i]["raw_output"] != b[i]["raw_output"] for i in ids)
        # CGLA's g(t) stays standard: the same prompts, so the same CGLs in both runs
        assert all(a[i]["conditions"] == b[i]["conditions"] for i in ids)
        assert group["cgla_acc"]["difference"] == 0.0
    assert differed > 0  # the variant reached the model: some answers changed


def test_resume_refuses_another_variant(
    variant_pair: tuple[Path, Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.cli import main

    a_dir, b_dir, _ = variant_pair
    # the release the pair ran on (each test has its own HF_HOME, the module's fixture had another)
    dataset = json.loads((a_dir / "results.json").read_text())["config"]["dataset"]
    common = ["eval", "--limit", str(LIMIT), "--no-progress", "--dataset", dataset]
    capsys.readouterr()
    assert main([*common, "--out", str(b_dir)]) == 2
    err = capsys.readouterr().err
    assert "holds a run with --prompt-variant core-focus, not standard" in err and err.count("\n") == 1
    assert main([*common, "--prompt-variant", "attribute-hint", "--out", str(a_dir)]) == 2
    assert "--prompt-variant standard, not attribute-hint" in capsys.readouterr().err
    assert main([*common, "--cgla-prompt-variant", "core-focus", "--out", str(a_dir)]) == 2
    assert "--cgla-prompt-variant standard, not core-focus" in capsys.readouterr().err
    # the same variant resumes (the finished run is left as it was)
    assert main([*common, "--prompt-variant", "core-focus", "--out", str(b_dir)]) == 0


def test_report_shows_a_variant_column_when_variants_differ(variant_pair: tuple[Path, Path, dict]) -> None:
    from mmspubench.eval.analysis.report import load_for_report, markdown_table

    a_dir, b_dir, _ = variant_pair
    table = markdown_table(load_for_report([a_dir, b_dir]))
    header, _, row_a, row_b = (line.split(" | ") for line in table.splitlines()[:4])
    column = header.index("Variant")
    assert (row_a[column], row_b[column]) == ("standard", "core-focus")
    assert "Variant" not in markdown_table(load_for_report([a_dir, a_dir]))
    # an older results.json without the field reads as standard
    old = json.loads((a_dir / "results.json").read_text())
    del old["config"]["prompt_variant"], old["config"]["cgla_prompt_variant"]
    assert "Variant" not in markdown_table([old, old])
    hinted = json.loads((b_dir / "results.json").read_text())
    hinted["config"]["prompt_variant"] = "attribute-hint"
    shown = markdown_table([old, hinted])
    assert "| attribute-hint (ceiling) |" in shown and "attribute-hint is a ceiling" in shown
