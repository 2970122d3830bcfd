"""A reply split into reasoning and answer text, per style (eval/replies/reasoning.py's rules)."""

from __future__ import annotations

import pytest
from mmspubench.eval.protocol import Generation, as_generation
from mmspubench.eval.replies.reasoning import STYLES, Split, split_reply, style_after_prompt, style_for


def split(text: str, style: str, finish: str | None = None, reasoning: str | None = None) -> Split:
    return split_reply(Generation(text, reasoning=reasoning, finish_reason=finish), style)


def test_as_generation_keeps_a_generation_and_wraps_a_string() -> None:
    generation = Generation("B", reasoning="r", finish_reason="stop", completion_tokens=3)
    assert as_generation(generation) is generation
    assert as_generation("B") == Generation(text="B")


def test_none_reads_the_whole_reply_even_with_markers() -> None:
    assert split("  <think>A</think> B\n", "none") == Split(None, "<think>A</think> B", False)
    assert split("B", "none", finish="length") == Split(None, "B", False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>\nIt is A? No: C.\n</think>\n\nC", Split("It is A? No: C.", "C", False)),
        ("<think></think>\n\nD", Split("", "D", False)),
        ("Let me look. <think>B</think>A", Split("Let me look.\nB", "A", False)),  # text before: reasoning
        ("<think>a</think>x<think>b</think> C ", Split("a\nx\nb", "C", False)),  # the last closing marker
        ("<think>a<think>b</think>c</think>D", Split("a\nb\nc", "D", False)),  # nested
        ("C", Split(None, "C", False)),  # skipped thinking: read whole
        ("<think>The answer is B", Split("The answer is B", "", True)),  # never closed
        ("<think>a</think>B<think>again", Split("a\n\nB\nagain", "", True)),  # reopened, never closed
        ("</think>B", Split("", "B", False)),  # a closing marker without an opening one
        ("A is wrong</think>B", Split("A is wrong", "B", False)),  # what precedes it is reasoning
        ("</think></think> B", Split("", "B", False)),  # repeated closing markers
        ("<think><think>a</think>B", Split("a", "B", False)),  # repeated opening markers
        ("", Split(None, "", False)),  # an empty reply: read as an empty answer (unparsed)
        ("<think>x</think>", Split("x", "", False)),  # only the block: an empty answer (unparsed)
        ("<THINK>a</THINK>B", Split(None, "<THINK>a</THINK>B", False)),  # markers are case-exact
    ],
)
def test_think(text: str, expected: Split) -> None:
    assert split(text, "think") == expected


def test_think_budget_cuts() -> None:
    assert split("<think>still going", "think", finish="length") == Split("still going", "", True)
    # Closed, then nothing before the budget ended: truncated, not unparsed.
    assert split("<think>B</think>\n", "think", finish="length") == Split("B", "", True)
    # Closed and an answer begun: the answer is read (and may be unparsed), not truncated.
    assert split("<think>B</think>The answer is (B", "think", finish="length").truncated is False
    # Nothing after the reasoning, but the model stopped: read as an empty answer.
    assert split("<think>B</think>", "think", finish="stop") == Split("B", "", False)


def test_think_open_reply_starts_inside_the_reasoning() -> None:
    assert split("The kite is A? No, C.\n</think>\n\nC", "think-open") == Split(
        "The kite is A? No, C.", "C", False
    )
    assert split("B, since the wings", "think-open") == Split("B, since the wings", "", True)
    assert split("B", "think-open", finish="stop") == Split("B", "", True)  # no closing marker at all
    # The server took the reasoning apart: the text is the answer.
    assert split("C", "think-open", reasoning="A? C.") == Split("A? C.", "C", False)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<think>x</think>\n<|begin_of_box|>C<|end_of_box|>", "C"),
        ("<think>x</think>The answer is <|begin_of_box|>D<|end_of_box|>.", "D"),
        ("<think>x</think><answer>B</answer>", "B"),
        ("<think>x</think><answer><|begin_of_box|>A<|end_of_box|></answer>", "A"),
        ("<think>x</think><answer>A</answer> <|begin_of_box|>B<|end_of_box|>", "B"),  # the box first
        ("<think>x</think><|begin_of_box|>A<|end_of_box|><|begin_of_box|>C<|end_of_box|>", "C"),  # last box
        ("<think>x</think>\n<answer>B", "B"),  # unclosed <answer>: what follows it
        ("<think>x</think> a kite ", "a kite"),
        ("<|begin_of_box|>B<|end_of_box|>", "B"),  # no thinking, still boxed
        ("<think>B</think><answer></answer>", ""),
    ],
)
def test_glm_reads_the_box_then_the_answer_tag(text: str, answer: str) -> None:
    assert split(text, "glm").answer_text == answer
    assert not split(text, "glm").truncated


def test_glm_letters_in_the_reasoning_never_count() -> None:
    result = split("<think>The answer is <|begin_of_box|>A<|end_of_box|></think>\nunsure", "glm")
    assert result == Split("The answer is <|begin_of_box|>A<|end_of_box|>", "unsure", False)
    assert split("<think>A, <answer>A</answer>", "glm", finish="length").truncated
    # A box written without closing the reasoning is inside it: truncated, the box never read.
    unclosed = split("<think>so <|begin_of_box|>C<|end_of_box|>", "glm", finish="stop")
    assert unclosed == Split("so <|begin_of_box|>C<|end_of_box|>", "", True)
    assert split("<think>x</think><|begin_of_box|>C", "glm").answer_text == "C"  # an unclosed box


def test_kimi() -> None:
    assert split("◁think▷It barks: A.◁/think▷A", "kimi") == Split("It barks: A.", "A", False)
    assert split("◁think▷B", "kimi", finish="length") == Split("B", "", True)
    # <think> is not Kimi's marker: read whole.
    assert split("<think>B</think>C", "kimi") == Split(None, "<think>B</think>C", False)
    # Mixed: <think> inside Kimi's block is reasoning; after it, it stays in the answer text,
    # which the strict parser then reads as a whole (no letter taken from inside it).
    assert split("◁think▷a<think>b</think>◁/think▷C", "kimi") == Split("a<think>b</think>", "C", False)
    assert split("◁think▷a◁/think▷<think>B</think>C", "kimi").answer_text == "<think>B</think>C"


def test_server_reasoning() -> None:
    assert split("\nB\n", "think", reasoning="r") == Split("r", "B", False)
    assert split("", "think", reasoning="cut in the", finish="length") == Split("cut in the", "", True)
    assert split("", "none", reasoning="cut", finish="length") == Split("cut", "", True)
    # Both at once: the inline block is split off too, joined to the server's reasoning.
    assert split("<think>b</think>C", "think", reasoning="a") == Split("a\n\nb", "C", False)
    assert split("<|begin_of_box|>D<|end_of_box|>", "glm", reasoning="r").answer_text == "D"


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown reasoning style 'qwen'"):
        split("B", "qwen")


QWEN3_TEMPLATE = (  # the generation prompt of Qwen3's hybrid template (thinking on by default)
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}{%- endif %}"
)
QWEN3_THINKING_TEMPLATE = (  # Qwen3-VL-*-Thinking: the generation prompt opens the block
    "{% if message.content is string and '<think>' in message.content %}{% endif %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}"
)


@pytest.mark.parametrize(
    ("family", "template", "style"),
    [
        (None, None, "none"),
        ("llava", "{{ messages }}", "none"),
        ("qwen3_vl", QWEN3_TEMPLATE, "think"),
        ("qwen3_vl", QWEN3_THINKING_TEMPLATE, "think-open"),
        ("internvl", "{% if enable_thinking %}<think>{% endif %}", "think"),
        ("glm4v_moe", "<|assistant|>{{ '<think>' }}", "glm"),
        ("glm4v", None, "glm"),
        (None, "{{ '<|begin_of_box|>' }}", "glm"),
        ("kimi_vl", None, "kimi"),
        (None, "{{ '◁think▷' }}", "kimi"),
    ],
)
def test_style_for(family: str | None, template: str | None, style: str) -> None:
    assert style_for(family, template) == style
    assert style in STYLES


def test_style_after_prompt() -> None:
    assert style_after_prompt("think", "<|im_start|>assistant\n<think>\n") == "think-open"
    assert style_after_prompt("think-open", "<|im_start|>assistant\n<think>\n\n</think>\n\n") == "think"
    assert style_after_prompt("think-open", "<|im_start|>assistant\n") == "think"
    assert style_after_prompt("glm", "<think>") == "glm"
    assert style_after_prompt("none", "<think>") == "none"
