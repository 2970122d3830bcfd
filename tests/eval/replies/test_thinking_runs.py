"""Runs of fake models that reason before they answer, in each family's markers and as a server
returns reasoning apart: what samples.jsonl, results.json and ``report`` record of each reply."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.eval.analysis.report import markdown_table
from mmspubench.eval.protocol import ChatPrompt, Generation

from tests.eval.fakes import FakeModel
from tests.helpers.run_folders import eval_run, fake_config

LETTERS = "ABCD"


def _right_wrong(context: str) -> tuple[str, str]:
    """The gold letter of the hand-made item a prompt asks about, and another one."""
    found = re.search(r"picture (\d+)", context)
    assert found is not None, context
    index = int(found.group(1)) % 4
    return LETTERS[index], LETTERS[(index + 1) % 4]


def _reply(style: str, right: str, wrong: str) -> Generation:
    counts = {"prompt_tokens": 40, "completion_tokens": 12}
    if style == "think":
        return Generation(f"<think>Maybe {wrong}. No.</think>\n\n{right}", None, "stop", **counts)
    if style == "think-open":
        return Generation(f"Maybe {wrong}. No.\n</think>\n\n{right}", None, "stop", **counts)
    if style == "glm":
        box = f"<|begin_of_box|>{right}<|end_of_box|>"
        return Generation(f"<think>Maybe {wrong}.</think><answer>{box}</answer>", None, "stop", **counts)
    if style == "kimi":
        return Generation(f"◁think▷Maybe {wrong}.◁/think▷{right}", None, "stop", **counts)
    if style == "server":  # reasoning_content apart, reasoning tokens from usage
        return Generation(right, f"Maybe {wrong}.", "stop", 40, 12, 9)
    if style == "letter-in-reasoning":  # the only letter is inside the reasoning: never read
        return Generation(f"<think>{right}</think>", None, "stop", **counts)
    if style == "truncated":  # a reasoning block the budget cut
        return Generation(f"<think>It could be {right} because", None, "length", 40, 16)
    raise AssertionError(style)


class Thinker(FakeModel):
    """The fake model answering each prompt in ``style``, with ``reasoning_style`` to match."""

    def __init__(self, style: str) -> None:
        super().__init__()
        self.style = style
        self.reasoning_style = {"server": "think", "glm": "glm", "kimi": "kimi"}.get(style, "think")

    def render(self, prompt: ChatPrompt) -> str:
        opened = "<think>\n" if self.style == "think-open" else ""
        return super().render(prompt) + opened

    def generate(
        self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int
    ) -> list[Generation]:
        return [_reply(self.style, *_right_wrong(c)) for c in contexts]


def _run(out: Path, model: Any, n: int = 8, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    config = fake_config(batch_size=3, metrics=("accuracy",), **options)
    results = eval_run(out, lambda: model, n=n, config=config)
    assert results is not None
    return results, [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("style", ["think", "think-open", "glm", "kimi", "server"])
def test_each_style_is_read_from_the_text_after_its_reasoning(tmp_path: Path, style: str) -> None:
    results, samples = _run(tmp_path / "run", Thinker(style))
    assert results["accuracy"]["overall"] == 100.0 and results["accuracy"]["unparsed"] == 0
    for sample in samples:
        assert sample["prediction"] == sample["answer"] and sample["correct"]
        wrong = LETTERS[(LETTERS.index(sample["answer"]) + 1) % 4]
        assert sample["reasoning"].startswith(f"Maybe {wrong}")  # kept, never read
        assert sample["read_by"] == "parser" and "truncated" not in sample
        if style == "server":
            assert sample["raw_output"] == sample["answer"] and "answer_text" not in sample
            assert sample["tokens"] == {"prompt": 40, "completion": 12, "reasoning": 9}
        else:  # the raw output whole, markers included; the answer text apart
            assert sample["raw_output"] != sample["answer"] and sample["answer_text"] == sample["answer"]
            assert sample["tokens"] == {"prompt": 40, "completion": 12}
        assert "seconds" not in sample  # a fake's replies are not timed
    replies = results["replies"]
    assert (replies["n"], replies["parsed"], replies["unparsed"], replies["truncated"]) == (8, 8, 0, 0)
    assert replies["share"] == {"parser": 100.0, "judge": 0.0, "none": 0.0, "truncated": 0.0}
    assert replies["tokens"]["completion"] == {"total": 96, "mean": 12.0, "counted": 8}
    assert replies["tokens_per_correct"] == 12.0  # 96 tokens over 8 right answers
    assert results["model"]["reasoning_style"] == (
        "think" if style == "server" else Thinker(style).reasoning_style
    )


def test_a_letter_inside_the_reasoning_never_counts(tmp_path: Path) -> None:
    results, samples = _run(tmp_path / "run", Thinker("letter-in-reasoning"))
    assert all(s["prediction"] is None and not s["correct"] for s in samples)
    assert all(s["answer_text"] == "" and s["read_by"] == "none" for s in samples)
    assert results["replies"]["unparsed"] == 8 and results["replies"]["truncated"] == 0


def test_a_reasoning_block_that_never_closes_is_truncated_never_unparsed(tmp_path: Path) -> None:
    results, samples = _run(tmp_path / "run", Thinker("truncated"))
    for sample in samples:
        assert sample["truncated"] is True and sample["prediction"] is None and not sample["correct"]
        assert sample["read_by"] == "none" and sample["answer_text"] == ""
        assert sample["reasoning"] == f"It could be {sample['answer']} because"  # the letter not read
    replies = results["replies"]
    assert (replies["parsed"], replies["unparsed"], replies["truncated"]) == (0, 0, 8)
    assert replies["share"]["none"] == 100.0 and replies["share"]["truncated"] == 100.0
    assert replies["tokens_per_correct"] is None  # no answer right
    table = markdown_table([results])
    header, _, row = table.splitlines()[:3]
    cells = {
        h.strip(): c.strip()
        for h, c in zip(header.strip("|").split(" | "), row.strip("|").split(" | "), strict=True)
    }
    assert cells["Truncated"] == "8" and cells["Unparsed"] == "0"
    assert cells["Read by (parser / judge / none %)"] == "0.00 / 0.00 / 100.00"
    assert cells["Tokens"] == "16.0"


class PlainGenerations(FakeModel):
    """The fake model's answers as Generations without reasoning (tokens and time counted)."""

    def generate(
        self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int
    ) -> list[Generation]:
        texts = super().generate(images, contexts, max_new_tokens)
        return [Generation(t, None, "stop", 30, 2, None, 0.25) for t in texts]


@pytest.mark.parametrize("metrics", [("accuracy",), ("accuracy", "circular", "blind")])
@pytest.mark.parametrize("engine", [FakeModel, PlainGenerations])
def test_a_run_without_reasoning_writes_its_lines_as_before_but_tokens_and_seconds(
    tmp_path: Path, metrics: tuple[str, ...], engine: type[FakeModel]
) -> None:
    config = fake_config(batch_size=3, metrics=metrics, blind_image="grey")
    before = eval_run(tmp_path / "plain", FakeModel, n=12, config=config)
    after = eval_run(tmp_path / "run", engine, n=12, config=config)
    assert before is not None and after is not None
    counted = engine is PlainGenerations

    def lines(run: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (tmp_path / run / "samples.jsonl").read_text().splitlines()]

    def without(answer: dict[str, Any]) -> dict[str, Any]:
        """The answer without its token fields, which it holds exactly when its engine counted."""
        assert ("tokens" in answer) == counted and ("seconds" in answer) == counted
        return {k: v for k, v in answer.items() if k not in ("tokens", "seconds", "run")}

    for line, was in zip(lines("run"), lines("plain"), strict=True):
        line = without(line)
        if "rotations" in line:
            line["rotations"] = [without(r) for r in line["rotations"]]
        if "blind" in line:
            line["blind"] = without(line["blind"])
        assert json.dumps(line) == json.dumps({k: v for k, v in was.items() if k != "run"})
    assert list(after) == list(before)
    assert after["accuracy"] == before["accuracy"]
    completion = {"total": 24, "mean": 2.0, "counted": 12} if counted else None
    assert after["replies"]["tokens"]["completion"] == completion


def test_a_logprob_run_has_no_replies_section(tmp_path: Path) -> None:
    results = eval_run(tmp_path / "run", FakeModel, n=4, config=fake_config(answer_mode="logprob"))
    assert results is not None and "replies" not in results
    for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines():
        assert not {"reasoning", "answer_text", "truncated", "read_by", "tokens", "seconds"} & set(
            json.loads(line)
        )
