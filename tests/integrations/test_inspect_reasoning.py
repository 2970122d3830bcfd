"""Thinking models through Inspect AI: the provider passes a reply's reasoning as Inspect's
``ContentReasoning`` (usage with reasoning tokens), the task reads the answer from the text after
the reasoning, and ``ingest inspect`` records ``reasoning``, ``answer_text``, ``read_by`` and
``tokens`` as ``mmspubench eval`` records them. Inspect's own ``eval()`` and log reading run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval.protocol import Generation

from tests.dataset_builder import hub_fixtures as hub
from tests.eval.standin_server import StandInServer

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ContentReasoning, ContentText, ModelOutput, ModelUsage, get_model

TASK = "mmspubench/mm_spubench"
ARGS = {"dataset": hub.REPO_ID, "revision": hub.COMMIT}
REASONING = "maybe A or B"
"""Reasoning that names other letters than the answer: a letter in it never counts."""


def _run(model: Any, log_dir: Path, **args: Any) -> EvalLog:
    logs = inspect_eval(TASK, model=model, task_args={**ARGS, **args}, display="none", log_dir=str(log_dir))
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0]


def _thinking(
    text: str, reasoning: str | None, stop: Any = "stop", usage: tuple[int, int, int] = (10, 5, 4)
) -> Any:
    """mockllm answering ``text`` after ``reasoning`` (a ``ContentReasoning`` part), with a usage."""
    content: Any = (
        text if reasoning is None else [ContentReasoning(reasoning=reasoning), ContentText(text=text)]
    )

    def reply(*_: Any) -> ModelOutput:
        output = ModelOutput.from_content("mockllm", content, stop_reason=stop)
        prompt, completion, thought = usage
        output.usage = ModelUsage(
            input_tokens=prompt,
            output_tokens=completion,
            total_tokens=prompt + completion,
            reasoning_tokens=thought,
        )
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def _ingest(log: EvalLog, out: Path) -> list[dict[str, Any]]:
    assert main(["ingest", "inspect", str(log.location), "--out", str(out)]) == 0
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _plain(line: dict[str, Any]) -> dict[str, Any]:
    """A sample line without what differs between any two runs (its stamp, its request's time)."""
    return {k: v for k, v in line.items() if k not in ("run", "seconds")}


def test_an_ingested_inspect_run_records_the_reasoning_as_eval_does(
    published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same replies (``C`` after the reasoning apart, with usage) through eval's OpenAI-compatible
    backend and through Inspect + ingest give the same sample lines."""
    monkeypatch.setenv("MMSPU_TEST_KEY", "sk-test-thinking")
    ours = tmp_path / "eval"
    with StandInServer(answer="C", reasoning=REASONING) as server:
        argv = ["eval", "--backend", "openai", "--base-url", server.base_url, "--model", "served-model"]
        argv += [
            "--dataset",
            hub.REPO_ID,
            "--out",
            str(ours),
            "--no-progress",
            "--api-key-env",
            "MMSPU_TEST_KEY",
        ]
        assert main([*argv, "--metrics", "accuracy"]) == 0
    evals = {line["id"]: line for line in map(json.loads, (ours / "samples.jsonl").read_text().splitlines())}
    first = next(iter(evals.values()))
    assert first["reasoning"] == REASONING and first["read_by"] == "parser" and first["prediction"] == "C"
    counts = first["tokens"]
    usage = (counts["prompt"], counts["completion"], counts["reasoning"])
    log = _run(_thinking("C", REASONING, usage=usage), tmp_path / "logs")
    assert log.samples is not None
    assert {s.output.completion for s in log.samples} == {"C"}  # the text after the reasoning only
    ingested = _ingest(log, tmp_path / "ingested")
    assert [_plain(line) for line in ingested] == [_plain(evals[line["id"]]) for line in ingested]
    results = json.loads((tmp_path / "ingested" / "results.json").read_text())
    assert results["model"]["reasoning_style"] == "think"
    assert results["replies"] == json.loads((ours / "results.json").read_text())["replies"]


def test_a_letter_in_the_reasoning_never_counts_and_a_cut_reasoning_is_truncated(
    published: Path, tmp_path: Path
) -> None:
    log = _run(_thinking("", "It is surely C because", stop="max_tokens"), tmp_path / "logs")
    assert log.samples is not None
    assert all((s.scores or {})["choice"].answer in (None, "") for s in log.samples)  # nothing marked
    lines = _ingest(log, tmp_path / "run")
    for line in lines:
        assert line["prediction"] is None and line["truncated"] is True and line["read_by"] == "none"
        assert line["reasoning"] == "It is surely C because" and line["raw_output"] == ""
        assert "answer_text" not in line  # the text after the reasoning is the raw output, empty
    replies = json.loads((tmp_path / "run" / "results.json").read_text())["replies"]
    assert replies["truncated"] == len(lines) and replies["unparsed"] == 0


def test_inline_reasoning_in_the_text_is_split_off_by_the_task_and_by_ingest(
    published: Path, tmp_path: Path
) -> None:
    inline = "<think>Not B, and surely not D.</think>\n\nA"
    log = _run(_thinking(inline, None), tmp_path / "logs")
    assert log.samples is not None
    assert {(s.scores or {})["choice"].answer for s in log.samples} == {"A"}
    for line in _ingest(log, tmp_path / "run"):
        assert line["raw_output"] == inline and line["answer_text"] == "A" and line["prediction"] == "A"
        assert line["reasoning"] == "Not B, and surely not D." and line["read_by"] == "parser"
        assert line["tokens"] == {"prompt": 10, "completion": 5, "reasoning": 4}


def test_a_run_without_reasoning_ingests_as_before(published: Path, tmp_path: Path) -> None:
    """No reasoning, no marker: no reading keys, no tokens, no reasoning style (the files of before)."""
    log = _run(_thinking("B", None), tmp_path / "logs", limit=2)
    for line in _ingest(log, tmp_path / "run"):
        assert not {"reasoning", "answer_text", "truncated", "read_by", "tokens", "seconds"} & set(line)
    assert "reasoning_style" not in json.loads((tmp_path / "run" / "results.json").read_text())["model"]


def test_usage_that_cannot_be_a_reply_is_refused_in_one_line(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _run(_thinking("C", REASONING, usage=(10, 3, 7)), tmp_path / "logs", limit=1)
    capsys.readouterr()
    assert main(["ingest", "inspect", str(log.location), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'model_usage.reasoning' is 7, more than the completion's 3" in err[0], err
    assert "record '" in err[0] and not (tmp_path / "run").exists()


class _ThinkingVLM:
    """A loaded model of ours that thinks in ``<think>`` before its answer (or is cut inside it)."""

    reasoning_style = "think"
    text_only = False

    def __init__(self, reply: Generation) -> None:
        self.reply = reply

    def render(self, prompt: Any) -> str:
        return "<|user|>" + prompt.user_text

    def generate(self, images: Any, contexts: Any, max_new_tokens: int) -> list[Generation]:
        return [self.reply for _ in contexts]


@pytest.mark.parametrize(
    ("reply", "reasoning", "text", "stop"),
    [
        (Generation("<think>Maybe A.</think>\n\nB", None, "stop", 12, 9, 6), "Maybe A.", "B", "stop"),
        (Generation("<think>Maybe A, but", None, "length", 12, 16, 16), "Maybe A, but", "", "max_tokens"),
    ],
)
def test_the_provider_passes_the_reasoning_as_inspects_reasoning_content(
    published: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reply: Generation,
    reasoning: str,
    text: str,
    stop: str,
) -> None:
    from mmspubench.integrations.inspect import provider

    monkeypatch.setattr(provider, "loaded_model", lambda key: _ThinkingVLM(reply))
    log = _run("mmspubench/thinking-stand-in", tmp_path / "logs", limit=2)
    assert log.samples is not None
    for sample in log.samples:
        parts = sample.output.message.content
        assert isinstance(parts, list) and isinstance(parts[0], ContentReasoning)
        assert parts[0].reasoning == reasoning and sample.output.completion == text
        assert sample.output.stop_reason == stop
        usage = sample.output.usage
        assert usage is not None and (usage.input_tokens, usage.output_tokens) == (
            12,
            reply.completion_tokens,
        )
        assert usage.reasoning_tokens == reply.reasoning_tokens
    marked = {(s.scores or {})["choice"].answer for s in log.samples}
    assert marked == ({text} if text else {None}) or (not text and marked <= {None, ""}), marked


@pytest.mark.parametrize(
    ("text", "reasoning", "style"),
    [
        ("C", None, "none"),
        ("C", "", "think"),  # a redacted reasoning part without a summary still marks a thinking reply
        ("<think>A?</think>C", None, "think"),
        ("</think>C", None, "think"),
        ("<think>A?</think><|begin_of_box|>C<|end_of_box|>", None, "glm"),
        ("<answer>C</answer>", "maybe", "glm"),
        ("◁think▷A?◁/think▷C", None, "kimi"),
    ],
)
def test_the_style_is_told_from_the_reply(text: str, reasoning: str | None, style: str) -> None:
    from mmspubench.integrations.inspect.replies import read_inspect_reply, reply_style

    assert reply_style(text, reasoning) == style
    split, reading = read_inspect_reply(text, reasoning, "stop", ["a", "b", "c", "d"])
    assert reading.prediction == "C" and "A" not in split.answer_text


def test_replies_in_two_styles_are_one_line() -> None:
    from mmspubench.errors import MMSpuBenchError
    from mmspubench.integrations.ingest.run import HarnessAnswer
    from mmspubench.integrations.ingest.sources import run_style

    kimi = HarnessAnswer("000000", "◁think▷A?◁/think▷C", None, None)
    think = HarnessAnswer("000001", "C", None, None, reasoning="A?")
    plain = HarnessAnswer("000002", "C", None, None)
    assert run_style([think, plain], "log.eval") == "think" and run_style([plain], "log.eval") == "none"
    with pytest.raises(
        MMSpuBenchError, match=r"log.eval: replies in more than one reasoning style \(kimi, think\)"
    ):
        run_style([kimi, think], "log.eval")


def test_reasoning_parts_and_inline_markers_at_once_are_joined_and_never_read() -> None:
    from inspect_ai.model import ChatMessageAssistant, Content, ContentText
    from mmspubench.integrations.inspect.replies import message_reasoning, read_inspect_reply

    parts: list[Content] = [
        ContentReasoning(reasoning="Surely A."),
        ContentReasoning(reasoning="hidden", redacted=True, summary="B, then"),
        ContentReasoning(reasoning="hidden", redacted=True),
        ContentText(text="<think>Or D?</think>C"),
    ]
    reasoning = message_reasoning(ChatMessageAssistant(content=parts))
    assert reasoning == "Surely A.\n\nB, then\n\n"
    split, reading = read_inspect_reply("<think>Or D?</think>C", reasoning, "stop", ["a", "b", "c", "d"])
    assert split.reasoning == "Surely A.\n\nB, then\n\nOr D?" and split.answer_text == "C"
    assert reading.prediction == "C"
    # Kimi's markers in the text beside a reasoning part: read by Kimi's, the part joined to them.
    split, reading = read_inspect_reply("◁think▷Or D?◁/think▷B", "A.", "stop", ["a", "b", "c", "d"])
    assert (split.reasoning, reading.prediction) == ("A.\n\nOr D?", "B")
