"""What the Space shows of a generate-mode run's replies: Explore folds a sample's reasoning under
its answer, as text; the leaderboard's Tokens column and thinking mark; runs without them (old
files, logprob runs) show what they showed before."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from mmspubench.eval.results_file import Results
from mmspubench.space import board_widths, handlers, preview
from mmspubench.space.handlers import SpaceConfig, SpaceState
from mmspubench.space.leaderboard import (
    ALL_COLUMNS,
    DEFAULT_COLUMNS,
    SCORE_COLUMNS,
    leaderboard_frame,
    load_entries,
    styled,
    view_frame,
)
from mmspubench.space.replies import TOKENS, reply_markdown, thinks, with_reply

from .fixtures import results_json, sample_record, write_run
from .release_runs import write_release, write_run_on
from .thinking_runs import COMPLETIONS, THINKING_ON, write_generate_run

HAND_MEAN = (12 + 20 + 31) / 3
"""The thinking runs' mean completion tokens per reply, by hand: 21.0."""


def render(markdown: str) -> str:
    """A permissive renderer: CommonMark with raw HTML on (as ``test_injection``)."""
    return MarkdownIt("commonmark").enable("table").render(markdown)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The fixture release and four runs on it: ``on`` (thinking on, reasoning tokens counted),
    ``apart`` (reasoning in its samples only: no ``model.thinking``, no reasoning tokens), ``plain``
    (generate mode, no reasoning) and ``old`` (a generate run whose samples record no reading and no
    tokens, as written before they existed)."""
    folder = tmp_path_factory.mktemp("thinking")
    release = write_release(folder / "release")
    root = folder / "runs"
    write_generate_run(root, "on", release, "org/thinker", thinking=THINKING_ON)
    write_generate_run(root, "apart", release, "org/served", reasoning_tokens=False)
    write_generate_run(root, "plain", release, "org/plain", reasoning=False, reasoning_tokens=False)
    write_run_on(root, "old", release, model="org/old")
    return release, root


@pytest.fixture(scope="module")
def state(runs: tuple[Path, Path]) -> SpaceState:
    """The Space started on the release beside the four runs."""
    release, root = runs
    with pytest.MonkeyPatch.context() as env:
        # Module fixtures run before the function-scoped HF_HOME fixture: isolate here as well.
        env.setenv("HF_HOME", str(root.parent / "hf_home"))
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("HF_DATASETS_OFFLINE", "1")
        return handlers.load_state(SpaceConfig(dataset=str(release), results=str(root), hub_models=()))


def _row(state: SpaceState, run: str) -> dict[str, object]:
    rows = state.board[state.board["Run"] == run]
    assert len(rows) == 1, state.board_note
    return dict(rows.iloc[0])


def test_explore_folds_the_reasoning_under_the_answer_as_text(state: SpaceState) -> None:
    for text in (
        preview.results_cgla(state, "000000", "on")[1],  # on opening the item
        handlers.show_cgla(state, "000000", "on", None)[1],  # on choosing the run
    ):
        assert "**The run's reply:** B (right) · read by the parser · 12 output tokens" in text
        assert "<details><summary>Reasoning (9 tokens)</summary>" in text
        out = render(text)
        assert "<details>" in out and out.count("</details>") == 1  # the run's own stays text
        assert "<script" not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
        assert "evil.example" not in "".join(out.split('href="')[1:])
        assert "&lt;/details&gt;" in out and out.index("&lt;/details&gt;") < out.index("</details>")


def test_a_sample_without_reasoning_renders_as_before(state: SpaceState) -> None:
    text = preview.results_cgla(state, "000000", "plain")[1]
    assert "<details>" not in text and "The run's reply" not in text
    record = sample_record()
    assert reply_markdown(record) == "" and with_reply("reading", record) == "reading"


def test_a_truncated_reply_says_so_and_reads_no_answer() -> None:
    record = {
        **sample_record(),
        "prediction": None,
        "correct": False,
        "raw_output": "<think>It could be <b>A</b> because",
        "reasoning": "It could be <b>A</b> because",
        "answer_text": "",
        "truncated": True,
        "read_by": "none",
        "tokens": {"prompt": 40, "completion": 16},
    }
    text = reply_markdown(record)
    assert "**The run's reply:** wrong · read by neither" in text and "**truncated**" in text
    assert "**Answer text read:** (none)" in text
    assert "<summary>Reasoning</summary>" in text  # its reasoning's tokens were not counted
    assert "<b>" not in render(text)


def test_the_answer_text_read_and_a_judge_are_shown() -> None:
    record = {
        **sample_record(),
        "raw_output": "I'd say <img src=x> the camel.",
        "answer_text": "I'd say <img src=x> the camel.",
        "reasoning": "",
        "read_by": "judge",
    }
    text = reply_markdown(record)
    assert "read by the judge" in text and "**Answer text read:** I'd say" in text
    assert "<img" not in render(text)


def test_the_tokens_column_shows_the_mean_output_tokens(state: SpaceState) -> None:
    assert _row(state, "on")[TOKENS] == pytest.approx(HAND_MEAN) == pytest.approx(sum(COMPLETIONS) / 3)
    assert _row(state, "plain")[TOKENS] == pytest.approx(HAND_MEAN)  # counted without reasoning too
    assert math.isnan(float(str(_row(state, "old")[TOKENS])))  # no tokens counted
    shown = view_frame(state.board, columns=[*DEFAULT_COLUMNS, TOKENS])
    assert list(shown.columns).index(TOKENS) == list(shown.columns).index(SCORE_COLUMNS[-1]) + 1
    html = styled(shown).to_html()
    assert "21.0<" in html
    assert board_widths.shown_text(TOKENS, HAND_MEAN) == "21.0"
    assert board_widths.shown_text(TOKENS, math.nan) == ""
    assert TOKENS in ALL_COLUMNS and TOKENS not in DEFAULT_COLUMNS


def test_the_thinking_mark_is_on_the_thinking_runs_only(state: SpaceState, runs: tuple[Path, Path]) -> None:
    assert _row(state, "on")["Mode"] == "generate, thinking"
    assert _row(state, "apart")["Mode"] == "generate, thinking"  # from its samples' reasoning
    assert _row(state, "plain")["Mode"] == "generate"
    assert _row(state, "old")["Mode"] == "generate"
    # results.json alone marks the run whose model thought; not the one whose samples only say so
    by_run = {str(e.row["Run"]): e.row["Mode"] for e in load_entries(runs[1])}
    assert by_run == {"on": "generate, thinking", "apart": "generate", "plain": "generate", "old": "generate"}


def test_the_thinking_rule_reads_recorded_fields_only() -> None:
    base = results_json("org/m", {"BG": 10.0}, 10.0, 5.0, 3)
    assert not thinks(Results.of(base, "r"))
    assert not thinks(Results.of({**base, "model": {**base["model"], "thinking": {"mode": "off"}}}, "r"))
    assert thinks(Results.of({**base, "model": {**base["model"], "thinking": THINKING_ON}}, "r"))
    # the model's name or --thinking as asked never mark a run
    named = {**base, "model": {**base["model"], "id": "org/Qwen3-VL-8B-Thinking"}}
    assert not thinks(Results.of({**named, "config": {"answer_mode": "generate", "thinking": "on"}}, "r"))


def test_an_old_results_file_loads_and_shows_as_before(tmp_path: Path) -> None:
    write_run(tmp_path, "r", results_json("org/m", {"BG": 10.0}, 10.0, 5.0, 3))
    frame = leaderboard_frame(load_entries(tmp_path))
    assert frame.loc[0, "Mode"] == "logprob" and math.isnan(frame.loc[0, TOKENS])
    shown = view_frame(frame, columns=[TOKENS])
    assert list(shown.columns) == ["Model", TOKENS]
    assert "nan" not in styled(shown).to_html().lower()
    assert list(view_frame(frame).columns) == list(DEFAULT_COLUMNS)  # the default table unchanged


def test_a_megabyte_of_reasoning_is_shown_cut_with_a_note_and_stays_text() -> None:
    reasoning = ("# Title\n**bold** </details><script>alert(1)</script> ```\n" * 20_000)[:1_048_576]
    record = {
        **sample_record(),
        "raw_output": f"<think>{reasoning}</think>" + "kite " * 1000,
        "reasoning": reasoning,
        "answer_text": "kite " * 1000,
        "read_by": "none",
        "prediction": None,
        "correct": False,
    }
    text = reply_markdown(record)
    assert len(text) < 30_000
    assert "(the first 20,000 of 1,048,576 characters; the whole is in samples.jsonl)" in text
    assert "(the first 2,000 of 5,000 characters)" in text
    out = render(text)
    assert out.count("</details>") == 1 and "<script" not in out and "<h1>" not in out
