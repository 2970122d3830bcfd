"""The thinking control (``eval/assets/tiny-llava-thinking``, trained with ``--reasoning``: a
``<think>`` block holding a decoy letter, then the option's text), through ``mmspubench eval``:

- ``--thinking on``: every answer is read after the block only, item by item what a hand cut at
  ``</think>`` and the strict parser read, never the decoy that a reader of the whole text takes;
- a budget below the reasoning: every reply ``truncated``, none unparsed, none right, and the run
  ends with the ``--max-truncated`` line (exit code 0);
- CGLA and ``logprob`` answers are scored thinking off (the empty reasoning block), and recorded so.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval import prompts
from mmspubench.eval.bundled import ASSETS
from mmspubench.eval.replies.parse import parse_answer, parse_final_answer
from mmspubench.eval.replies.summary import truncated_line

pytest.importorskip("torch")

MODEL = ASSETS / "tiny-llava-thinking"
LIMIT = 30
"""Items of the bundled release each run takes (the first ones)."""
PAIRED = 12
"""Items of the two runs compare pairs."""
EMPTY_BLOCK = "<think>\n\n</think>\n\n"
DECOY = re.compile(r"Answer: \(([ABCD])\)")


@pytest.fixture(scope="module")
def options() -> dict[str, tuple[str, ...]]:
    """Each bundled item's options, by id."""
    from mmspubench.dataset_builder.defaults import default_dataset_dir
    from mmspubench.dataset_builder.load import load_pinned
    from mmspubench.eval import data

    ds, _ = load_pinned(str(default_dataset_dir()), "test")
    return {item.id: tuple(item.options) for item in data.load_items(ds, LIMIT, "bundled")}


def _run(out: Path, *more: str, limit: int = LIMIT) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    argv = ["eval", "--model", str(MODEL), "--limit", str(limit), "--no-progress", "--out", str(out), *more]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    return results, samples


@pytest.mark.parametrize("mode", [pytest.param("on", marks=pytest.mark.slow), "auto"])
def test_thinking_answers_equal_the_hand_cut_ones_and_never_the_decoy(
    mode: str, options: dict[str, tuple[str, ...]], tmp_path: Path
) -> None:
    more = ("--metrics", "accuracy", "--max-new-tokens", "32")
    results, samples = _run(tmp_path / mode, "--thinking", mode, *more)
    assert results["model"]["thinking"]["mode"] == "on" and len(samples) == LIMIT
    decoys = parsed = 0
    for s in samples:
        raw, chosen = s["raw_output"], options[s["id"]]
        assert raw.startswith("<think>") and raw.count("</think>") == 1, raw
        assert s["reasoning"] and "truncated" not in s
        cut = parse_answer(raw.split("</think>")[-1], chosen)  # the block removed by hand
        # a class name that is not among the options is unparsed, as with the other tiny models
        assert s["prediction"] == cut and s["read_by"] == ("parser" if cut else "none"), s
        assert parse_answer(raw, chosen) is None  # the whole text names nothing
        whole = parse_final_answer(raw, chosen)  # a reader of the whole text: the decoy
        decoy = DECOY.search(s["reasoning"])
        assert decoy is not None and whole == decoy.group(1), s
        decoys += whole != cut
        parsed += cut is not None
    assert decoys >= LIMIT // 2, decoys  # the control can fail: the decoy is read on these items
    right = sum(s["correct"] for s in samples)
    assert results["accuracy"]["overall"] == pytest.approx(100 * right / LIMIT)
    assert parsed >= LIMIT * 3 // 4 and results["replies"]["parsed"] == parsed
    assert results["replies"]["unparsed"] == LIMIT - parsed and results["replies"]["truncated"] == 0


def test_a_budget_below_the_reasoning_truncates_every_reply_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, samples = _run(
        tmp_path / "short", "--thinking", "on", "--metrics", "accuracy", "--max-new-tokens", "8"
    )
    replies = results["replies"]
    assert (replies["truncated"], replies["unparsed"], replies["parsed"]) == (LIMIT, 0, 0)
    for s in samples:
        assert s["raw_output"].startswith("<think>") and "</think>" not in s["raw_output"]
        assert s["truncated"] is True and s["read_by"] == "none"
        assert (s["prediction"], s["correct"]) == (None, False)
    assert results["accuracy"]["overall"] == 0.0  # by design: a cut reply is never scored right
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == truncated_line(replies, 0.05)
    assert err[-1].startswith(f"warning: {LIMIT} of {LIMIT} replies (100.0%, above --max-truncated 0.05)")


def test_cgla_and_logprob_are_scored_thinking_off_and_recorded(tmp_path: Path) -> None:
    results, samples = _run(
        tmp_path / "cgla", "--thinking", "on", "--metrics", "accuracy,cgla", "--max-new-tokens", "32"
    )
    assert results["model"]["thinking"] == {
        "mode": "on",
        "set_by": "chat_template_kwargs:enable_thinking",
        "scored_rendering": "enable_thinking=false",
    }
    conditions = [c for s in samples for c in s["conditions"]]
    assert conditions and all(
        c["prompt"].endswith(EMPTY_BLOCK + prompts.CGLA_ASSISTANT_PREFIX) for c in conditions
    )
    assert all(math.isfinite(c["cgl"]) for c in conditions) and results["cgla"]["n"] == LIMIT
    results, samples = _run(tmp_path / "logprob", "--metrics", "accuracy", "--answer-mode", "logprob")
    assert results["model"]["thinking"]["scored_rendering"] == "enable_thinking=false"
    assert all(s["prediction"] in "ABCD" and not s.get("reasoning") for s in samples)


def _bench() -> Any:
    import importlib.util

    script = Path(__file__).resolve().parents[3] / "bench" / "thinking_control.py"
    spec = importlib.util.spec_from_file_location("thinking_control", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_figure_script_reads_each_raw_output_four_ways() -> None:
    bench = _bench()
    opts = ("boat", "kite", "cup", "star")
    raws = [
        "<think>\nAnswer: (A)\nNo, look again.\n</think>\n\nkite",  # right; the decoy A is wrong
        "<think>\nAnswer: (B)\nNo, look again.\n</think>\n\nboat",  # right; the decoy B is wrong
        "<think>\nAnswer: (A)\nNo, look",  # cut inside the reasoning
    ]
    assert [bench.readings(r, opts) for r in raws] == [
        {"cut": "B", "whole": None, "final": "A"},
        {"cut": "A", "whole": None, "final": "B"},
        {"cut": None, "whole": None, "final": "A"},
    ]
    samples: list[dict[str, str | None]] = [
        {"id": "1", "answer": "B", "prediction": "B", "raw_output": raws[0], "reasoning": "Answer: (A)"},
        {"id": "2", "answer": "A", "prediction": "A", "raw_output": raws[1], "reasoning": "Answer: (B)"},
        {"id": "3", "answer": "A", "prediction": None, "raw_output": raws[2], "reasoning": "x"},
    ]
    results = {"config": {"max_new_tokens": 32}, "replies": {"truncated": 1, "unparsed": 0}}
    row = bench.control_row("fits", results, samples, {str(s["id"]): opts for s in samples})
    assert row == {
        "run": "fits",
        "max_new_tokens": 32,
        "n": 3,
        "run_accuracy": pytest.approx(200 / 3),
        "cut_accuracy": pytest.approx(200 / 3),
        "whole_accuracy": 0.0,
        "final_accuracy": pytest.approx(100 / 3),  # item 3: the decoy A happens to be gold
        "cut_agrees": 3,
        "final_differs": 3,
        "reasoning": 3,
        "decoys": "A 1, B 1",
        "truncated": 1,
        "unparsed": 0,
    }
    table = bench.markdown([row]).splitlines()
    assert (
        len(table) == 3
        and table[2] == "| fits | 32 | 3 | 66.7 | 66.7 | 3 | 0.0 | 33.3 | 3 | A 1, B 1 | 3 | 1 | 0 |"
    )


def test_the_control_ships_as_package_data_with_its_card() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    pyproject = tomllib.loads((ASSETS.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["mmspubench.eval.assets"]
    shipped = {p for pattern in patterns for p in ASSETS.glob(pattern) if p.is_file()}
    files = {p for p in MODEL.rglob("*") if p.is_file()}
    assert MODEL / "model.safetensors" in files and files <= shipped
    training = json.loads((MODEL / "training.json").read_text(encoding="utf-8"))
    card = (MODEL / "README.md").read_text(encoding="utf-8")
    assert training["config"]["reasoning"] is True
    assert _bench().train_command(training["config"]) in card and _bench().COMMAND in card


def test_compare_pairs_a_thinking_run_with_its_thinking_off_run_item_by_item(tmp_path: Path) -> None:
    """The control's two runs, thinking on and off, through ``compare``: paired by item, the
    counts of items right in one run only are the samples', and the one option that differs is
    named (the model is the same)."""
    more = ("--metrics", "accuracy", "--max-new-tokens", "32")
    _, on = _run(tmp_path / "on", "--thinking", "on", *more, limit=PAIRED)
    _, off = _run(tmp_path / "off", "--thinking", "off", *more, limit=PAIRED)
    # off: the prompt holds the empty block; this model, trained to think only, writes its own
    # block all the same, which is read as reasoning (recorded, not hidden)
    assert all(s["reasoning"] for s in on)
    out = tmp_path / "cmp.json"
    argv = ["compare", str(tmp_path / "on"), str(tmp_path / "off"), "--json", str(out), "--resamples", "50"]
    assert main(argv) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    a = {s["id"]: s["correct"] for s in on}
    b = {s["id"]: s["correct"] for s in off}
    assert doc["n"] == PAIRED and sorted(a) == sorted(b)
    overall = doc["groups"][0]["accuracy"]
    assert overall["a"] == pytest.approx(100 * sum(a.values()) / PAIRED)
    assert overall["b"] == pytest.approx(100 * sum(b.values()) / PAIRED)
    assert overall["only_a"] == sum(a[i] and not b[i] for i in a)
    assert overall["only_b"] == sum(b[i] and not a[i] for i in a)
    assert set(doc["config_differences"]) == {"thinking"}, doc["config_differences"]
