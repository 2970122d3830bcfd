"""``submit`` checks results.json's ``model.thinking`` (the Space's thinking mark) against the run's
own config and samples: a malformed record, a mode the config did not ask, a switch claimed under
``--thinking auto``, or reasoning recorded in a run that records no thinking and no reasoning style
is refused in one line naming the file and the field (exit 2); every genuine run of the thinking
control (``--thinking on``/``off``/``auto``) and the default bundled run pass the same checks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.checkpoint.thinking import SET_BY_DEFAULT, SET_BY_KWARG
from mmspubench.eval.config import RunConfig
from mmspubench.eval.prompts import prompt_spec
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.record import ReplyReading

from tests.eval.submit.test_submit import DATASET, REVISION, _submit_dry_run, published_split
from tests.eval.submit.test_submit_generate_answers import _records
from tests.helpers.identity import model_identity
from tests.helpers.run_folders import write_run_folder
from tests.helpers.shared_runs import bundled_run

__all__ = ["published_split"]  # the autouse fixture of test_submit: the published split of these tests

SWITCH_ON = {"mode": "on", "set_by": SET_BY_KWARG, "scored_rendering": "enable_thinking=false"}
"""What a run of a switchable model asked ``--thinking on`` records."""
DEFAULT_ON = {"mode": "on", "set_by": SET_BY_DEFAULT, "scored_rendering": "enable_thinking=false"}
"""What a run of a switchable model that thinks by default, asked ``auto``, records."""
ALWAYS_ON = {"mode": "on", "set_by": SET_BY_DEFAULT, "scored_rendering": "none"}
"""What a run of a model that always thinks records."""
NEVER = {"mode": "off", "set_by": SET_BY_DEFAULT, "scored_rendering": "chat template as is"}
"""What a run of a model that never thinks, asked ``--thinking off``, records."""
ABSENT = object()


def _reasoned(s: SampleResult) -> SampleResult:
    """``s`` with reasoning recorded apart from its (unchanged) raw output, as a server returns it."""
    assert s.raw_output is not None
    read_by = "parser" if s.prediction is not None else "none"
    return replace(s, reading=ReplyReading(s.raw_output.strip(), read_by, "Let me look. Maybe D."))


def _write(
    root: Path, thinking: Any, asked: str = "auto", reasoning: bool = False, style: str | None = None
) -> Path:
    samples = _records(("accuracy",), lambda s: s)
    if reasoning:
        samples = [_reasoned(s) for s in samples]
    config = RunConfig(
        model="org/model", dataset=DATASET, prompts=prompt_spec(), metrics=("accuracy",), thinking=asked
    )
    fields: dict[str, Any] = {} if thinking is ABSENT else {"thinking": thinking}
    if style is not None:
        fields["reasoning_style"] = style
    dataset = {"id": DATASET, "revision": REVISION}
    return write_run_folder(root, config, samples, dataset, model_identity(**fields)) / "results.json"


@pytest.mark.parametrize(
    ("thinking", "asked", "reasoning"),
    [
        (ABSENT, "auto", False),
        (SWITCH_ON, "on", True),
        ({**SWITCH_ON, "mode": "off"}, "off", False),
        (DEFAULT_ON, "auto", True),
        (ALWAYS_ON, "on", True),
        (ALWAYS_ON, "auto", True),
        (NEVER, "off", False),
    ],
)
def test_each_record_thinking_writes_is_accepted(
    tmp_path: Path, thinking: Any, asked: str, reasoning: bool
) -> None:
    results = _write(tmp_path / "run", thinking, asked, reasoning)
    assert _submit_dry_run(results, tmp_path / "out") == 0


_FIELD = "field 'model.thinking"


@pytest.mark.parametrize(
    ("thinking", "asked", "reasoning", "said"),
    [
        ("on", "auto", False, f"{_FIELD}': a JSON string, not an object"),
        (None, "auto", False, f"{_FIELD}': a JSON null, not an object"),
        ({**SWITCH_ON, "by": "me"}, "on", False, f"{_FIELD}.by': unknown key"),
        ({"mode": "on", "set_by": SET_BY_KWARG}, "on", False, f"{_FIELD}.scored_rendering': missing"),
        ({**SWITCH_ON, "mode": "yes"}, "on", False, f"{_FIELD}.mode': 'yes' is not 'on' or 'off'"),
        ({**SWITCH_ON, "mode": True}, "on", False, f"{_FIELD}.mode': True is not 'on' or 'off'"),
        ({**SWITCH_ON, "set_by": "the user"}, "on", False, f"{_FIELD}.set_by': 'the user' is not"),
        ({**SWITCH_ON, "scored_rendering": "x"}, "on", False, f"{_FIELD}.scored_rendering': 'x' is not"),
        ({**ALWAYS_ON, "mode": "off"}, "off", False, f"{_FIELD}.scored_rendering': 'none' is not written"),
        ({**NEVER, "mode": "on"}, "on", False, f"{_FIELD}.scored_rendering': 'chat template as is' is not"),
        ({**ALWAYS_ON, "set_by": SET_BY_KWARG}, "on", False, f"{_FIELD}.scored_rendering': 'none' is not"),
        (SWITCH_ON, "off", False, f"{_FIELD}.mode': 'on' but the run asked --thinking off"),
        ({**SWITCH_ON, "mode": "off"}, "on", False, f"{_FIELD}.mode': 'off' but the run asked --thinking on"),
        (SWITCH_ON, "auto", False, f"{_FIELD}.set_by': {SET_BY_KWARG!r} but the run asked --thinking auto"),
        (ABSENT, "auto", True, "record '000000': field 'reasoning': recorded, but results.json records no"),
        (
            NEVER,
            "off",
            True,
            "record '000000': field 'reasoning': recorded, but results.json records mode 'off'",
        ),
    ],
)
def test_a_thinking_record_the_run_does_not_show_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    thinking: Any,
    asked: str,
    reasoning: bool,
    said: str,
) -> None:
    out = tmp_path / "out"
    results = _write(tmp_path / "run", thinking, asked, reasoning)
    assert _submit_dry_run(results, out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "examples/s]" not in line]
    assert len(lines) == 1 and "Traceback" not in err and not out.exists(), err
    assert said in err, err
    where = "samples.jsonl" if "reasoning" in said else "results.json"
    assert lines[0].split(": ")[2].endswith(where), err


def test_reasoning_under_a_style_that_splits_it_needs_no_thinking_record(tmp_path: Path) -> None:
    """A thinking-off run of a model whose replies mark reasoning (style ``think``) may record what
    the model wrote in them (and an ``auto`` run of a model that never thinks records nothing)."""
    off = {**SWITCH_ON, "mode": "off"}
    assert _submit_dry_run(_write(tmp_path / "a", off, "off", True, "think"), tmp_path / "oa") == 0


def test_a_scored_run_of_a_model_without_a_scored_rendering_is_refused(tmp_path: Path) -> None:
    from mmspubench.eval.results_file import read_results_file
    from mmspubench.eval.submit.thinking_check import check_thinking_record

    results_path = _write(tmp_path / "run", ALWAYS_ON, "on")
    results = read_results_file(results_path)
    config = replace(results.run_config(results_path), metrics=("accuracy", "cgla"))
    with pytest.raises(MMSpuBenchError, match=r"scored_rendering': 'none' .* but the run scored prompts"):
        check_thinking_record(results, config, str(results_path))
    check_thinking_record(results, replace(config, metrics=("accuracy",)), str(results_path))


# Genuine runs through `mmspubench eval`: every kind passes submit's checks of a run folder.

LIMIT = "3"
"""Items of the bundled release each genuine run takes."""


def _check_folder(folder: Path) -> None:
    """``submit``'s checks of a run folder that need no published dataset (the thinking record's
    and its samples' among them)."""
    from mmspubench.eval.results import read_finished_samples
    from mmspubench.eval.results_file import read_results_file
    from mmspubench.eval.submit.submission import check_run_figures, check_run_samples

    path = folder / "results.json"
    results = read_results_file(path)
    samples = tuple(read_finished_samples(folder / "samples.jsonl"))
    check_run_samples(results, samples, results.run_config(path), path)
    check_run_figures(results, samples, results.run_config(path), path)


@pytest.fixture(scope="module")
def thinking_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Runs of the thinking control asked ``--thinking`` on, off and auto (CGLA scored too)."""
    pytest.importorskip("torch")
    from mmspubench.cli import main
    from mmspubench.eval.bundled import ASSETS

    root = tmp_path_factory.mktemp("thinking-runs")
    runs = {}
    for mode in ("on", "off", "auto"):
        out = root / mode
        argv = ["eval", "--model", str(ASSETS / "tiny-llava-thinking"), "--limit", LIMIT, "--no-progress"]
        assert main([*argv, "--out", str(out), "--thinking", mode, "--max-new-tokens", "32"]) == 0
        runs[mode] = out
    return runs


@pytest.mark.parametrize("mode", ["on", "off", "auto"])
def test_genuine_thinking_runs_pass(thinking_runs: dict[str, Path], mode: str) -> None:
    results = json.loads((thinking_runs[mode] / "results.json").read_text(encoding="utf-8"))
    expected = {"on": SWITCH_ON, "off": {**SWITCH_ON, "mode": "off"}, "auto": DEFAULT_ON}[mode]
    assert results["model"]["thinking"] == expected
    _check_folder(thinking_runs[mode])


def test_the_default_bundled_run_passes(tmp_path_factory: pytest.TempPathFactory) -> None:
    pytest.importorskip("torch")
    folder = bundled_run(tmp_path_factory, "default")
    assert "thinking" not in json.loads((folder / "results.json").read_text(encoding="utf-8"))["model"]
    _check_folder(folder)


Edit = Callable[[dict[str, Any]], None]


def _set(key: str, value: Any) -> Edit:
    def edit(thinking: dict[str, Any]) -> None:
        thinking[key] = value

    return edit


@pytest.mark.parametrize(
    ("mode", "edit", "said"),
    [
        ("off", _set("mode", "on"), "field 'model.thinking.mode': 'on' but the run asked --thinking off"),
        ("auto", _set("set_by", SET_BY_KWARG), "field 'model.thinking.set_by'"),
        ("on", _set("extra", 1), "field 'model.thinking.extra': unknown key"),
        ("on", _set("scored_rendering", "none"), "field 'model.thinking.scored_rendering'"),
    ],
)
def test_forged_copies_of_genuine_runs_are_refused(
    thinking_runs: dict[str, Path], tmp_path: Path, mode: str, edit: Edit, said: str
) -> None:
    folder = tmp_path / mode
    shutil.copytree(thinking_runs[mode], folder)
    path = folder / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    edit(results["model"]["thinking"])
    path.write_text(json.dumps(results), encoding="utf-8")
    with pytest.raises(MMSpuBenchError, match=said) as caught:
        _check_folder(folder)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)
