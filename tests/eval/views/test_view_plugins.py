"""The views as plug-ins: a view declared here, registered by the test, runs everywhere a view does.

The toy view asks each item again with its options in reverse order and records the answer; an
always-A model is right there exactly where the gold option is the published D (hand-computed).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import metrics, records, results
from mmspubench.eval.analysis.report import markdown_table
from mmspubench.eval.asking import Ask, answer_of
from mmspubench.eval.config import RunConfig, with_options
from mmspubench.eval.protocol import ScoreRequest
from mmspubench.eval.views import registry
from mmspubench.eval.views.confounds.cells import any_section, section_pct
from mmspubench.eval.views.plugin import Chunk, Column, Part, View

from tests.eval.fakes import FakeModel
from tests.helpers.run_folders import eval_run, fake_config

N = 10
"""Items 0-9: gold letter ``i % 4``; the published D (item 3, 7) is A once the options are reversed."""


class AlwaysA(FakeModel):
    """Answers A to every question (and scores A highest)."""

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        self.generate_calls.append(len(contexts))
        return ["A" for _ in contexts]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        self.score_calls.append(len(requests))
        return [0.0 if r.continuation.strip() == "A" else -1.0 for r in requests]


def _asks(items: Sequence[Any], config: RunConfig, state: Any) -> list[Ask]:
    return [Ask(item, tuple(reversed(item.options)), item.pil_image) for item in items]


def _gold(answer: str) -> str:
    return ANSWER_LETTERS[len(ANSWER_LETTERS) - 1 - ANSWER_LETTERS.index(answer)]


def _take(chunk: Chunk, config: RunConfig) -> list[records.Answer]:
    return [answer_of(r, _gold(item.answer)) for item, r in zip(chunk.items, chunk.replies, strict=True)]


def _section(ordered: Sequence[records.SampleResult], config: RunConfig) -> dict[str, Any]:
    answers = [s.part("reversed") for s in ordered]
    for s, a in zip(ordered, answers, strict=True):
        if a is None:
            raise MMSpuBenchError(f"samples: record {s.id!r}: field 'reversed': missing in a reversed run")
    return {"accuracy": metrics.percent([a.correct for a in answers]), "n": len(answers)}


REVERSED = View(
    name="reversed",
    summary="the options in reverse order",
    asks=_asks,
    take=_take,
    part=Part("reversed", lambda a: a.to_json(), lambda v: records.Answer.from_json(v, "reversed")),
    section=_section,
    columns=(Column("Reversed", section_pct("reversed", "accuracy"), any_section("reversed")),),
)


@pytest.fixture
def reversed_view() -> Iterator[View]:
    registry.register(REVERSED)
    try:
        yield REVERSED
    finally:
        del registry.VIEWS[REVERSED.name]


def _run(out: Path, metrics_text: str, model: Any = None) -> dict[str, Any]:
    config = with_options(fake_config(batch_size=4), {"metrics": metrics_text})
    got = eval_run(out, lambda: model or AlwaysA(), n=N, config=config.validate())
    assert got is not None
    return got


def test_a_registered_view_asks_records_and_summarises(tmp_path: Path, reversed_view: View) -> None:
    model = AlwaysA()
    out = _run(tmp_path / "run", "accuracy,reversed", model)
    # one generate call per chunk holds the published and the reversed asks (4 + 4, 4 + 4, 2 + 2)
    assert model.generate_calls == [8, 8, 4]
    assert out["accuracy"]["overall"] == pytest.approx(30.0)  # items 0, 4, 8 (gold A)
    assert out["reversed"] == {"accuracy": pytest.approx(20.0), "n": N}  # items 3, 7 (gold D)
    assert list(out)[list(out).index("cgla") + 1] == "reversed"  # its section after the built-ins'
    lines = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [line["reversed"]["correct"] for line in lines] == [i % 4 == 3 for i in range(N)]
    assert {line["reversed"]["prediction"] for line in lines} == {"A"}
    # read back: the part is the view's, and the section recomputes from the lines alone
    samples = results.read_finished_samples(tmp_path / "run" / "samples.jsonl")
    assert samples[3].part("reversed") == records.Answer("A", True, "A", None)
    config = RunConfig.from_json(out["config"])
    assert results.recompute(samples, config)["reversed"] == out["reversed"]
    # report: its column, shown for a run that has the section only
    table = markdown_table([out])
    assert table.splitlines()[0].endswith("| Reversed |")
    assert table.splitlines()[2].split("|")[-2].strip() == "20.00"


def test_runs_without_the_view_are_byte_identical(tmp_path: Path) -> None:
    before = _run(tmp_path / "before", "accuracy,cgla,circular")
    registry.register(REVERSED)
    try:
        after = _run(tmp_path / "after", "accuracy,cgla,circular")
        assert "Reversed" not in markdown_table([after])
    finally:
        del registry.VIEWS[REVERSED.name]
    a = (tmp_path / "before" / "samples.jsonl").read_bytes()
    assert a == (tmp_path / "after" / "samples.jsonl").read_bytes()
    strip = ("timing", "created_at")
    assert {k: v for k, v in before.items() if k not in strip} == {
        k: v for k, v in after.items() if k not in strip
    }


def test_an_edited_part_is_refused_naming_its_field(tmp_path: Path, reversed_view: View) -> None:
    _run(tmp_path / "run", "accuracy,reversed")
    path = tmp_path / "run" / "samples.jsonl"
    lines = path.read_text().splitlines()
    forged = json.loads(lines[2])
    forged["reversed"]["correct"] = "yes"
    path.write_text("\n".join([*lines[:2], json.dumps(forged), *lines[3:]]) + "\n")
    with pytest.raises(
        MMSpuBenchError, match=r"line 3: not a sample record \(record '000002': .*reversed\.correct"
    ):
        results.read_finished_samples(path)


def test_the_metrics_option_takes_a_registered_name_only(reversed_view: View) -> None:
    assert with_options(None, {"metrics": "reversed,accuracy"}).metrics == ("accuracy", "reversed")
    with pytest.raises(MMSpuBenchError, match="reversed needs accuracy too"):
        with_options(None, {"metrics": "cgla,reversed"}).validate()
    del registry.VIEWS[REVERSED.name]
    try:
        with pytest.raises(MMSpuBenchError, match="unknown metric 'reversed'"):
            with_options(None, {"metrics": "accuracy,reversed"})
    finally:
        registry.register(REVERSED)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"name": "accuracy"}, "'accuracy': the name is taken"),
        ({"name": "timing"}, "'timing': the name is taken"),
        ({"part": Part("blind", str, str)}, "sample key 'blind' is taken"),
        ({"part": Part("id", str, str)}, "sample key 'id' is taken"),
        ({"part": Part("run", str, str)}, "sample key 'run' is taken"),
    ],
)
def test_register_refuses_a_taken_name_or_key(change: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        registry.register(dataclasses.replace(REVERSED, **change))
    assert "reversed" not in registry.VIEWS


@pytest.mark.parametrize(
    ("change", "error", "needle"),
    [
        ({"name": ""}, ValueError, "view '': the name must be a lowercase identifier"),
        ({"name": "acc,probe"}, ValueError, "view 'acc,probe': the name must be a lowercase identifier"),
        ({"name": "7"}, ValueError, "view '7': the name must be a lowercase identifier"),
        ({"name": "Reversed"}, ValueError, "view 'Reversed': the name must be a lowercase identifier"),
        ({"name": "intervention:x"}, ValueError, "the name must be a lowercase identifier"),
        ({"name": 7}, TypeError, "view 7: the name must be a str, not int"),
        ({"name": "harness"}, ValueError, "'harness': the name is taken"),
        ({"part": Part("", str, str)}, ValueError, "sample key '': the sample key must be a lowercase"),
        ({"part": Part("a b", str, str)}, ValueError, "sample key 'a b': the sample key must be a lowercase"),
        ({"part": Part(5, str, str)}, TypeError, "sample key 5: the sample key must be a str, not int"),
    ],
)
def test_register_refuses_a_name_or_key_other_than_a_lowercase_identifier(
    change: dict[str, Any], error: type[Exception], needle: str
) -> None:
    before = dict(registry.VIEWS)
    with pytest.raises(error, match=re.escape(needle)):
        registry.register(dataclasses.replace(REVERSED, **change))
    assert before == registry.VIEWS


def test_every_built_in_name_and_key_is_a_lowercase_identifier() -> None:
    for view in registry.VIEWS.values():
        assert registry.NAME_PATTERN.fullmatch(view.name)
        assert view.part is None or registry.NAME_PATTERN.fullmatch(view.part.key)


def test_the_built_in_views_are_the_registry_in_run_order() -> None:
    assert registry.names() == ("accuracy", "cgla", "circular", "blind", "calibration", "interventions")
    keys = [v.part.key for v in registry.VIEWS.values() if v.part is not None]
    assert keys == list(records.BUILTIN_PARTS)
    assert [v.name for v in registry.VIEWS.values() if v.confound] == ["circular", "blind", "calibration"]
    assert registry.get_view("blind").check_model is not None
    with pytest.raises(MMSpuBenchError, match="unknown; expected one of accuracy, cgla"):
        registry.get_view("reversed")


def test_a_view_taking_too_few_parts_is_one_line(tmp_path: Path) -> None:
    short = dataclasses.replace(
        REVERSED, name="short", part=Part("short", str, str), take=lambda chunk, config: []
    )
    registry.register(short)
    try:
        with pytest.raises(MMSpuBenchError, match="view 'short' took 0 parts for 4 items"):
            _run(tmp_path / "run", "accuracy,short")
    finally:
        del registry.VIEWS["short"]
    assert not (tmp_path / "run").exists()  # nothing written


def test_submit_wants_a_registered_view_s_part_exactly_in_its_runs(
    tmp_path: Path, reversed_view: View
) -> None:
    from mmspubench.eval.submit.checks import check_sample_consistency

    out = _run(tmp_path / "run", "accuracy,reversed")
    samples = results.read_finished_samples(tmp_path / "run" / "samples.jsonl")
    config = RunConfig.from_json(out["config"])
    check_sample_consistency(samples, config, "samples.jsonl")
    dropped = dataclasses.replace(samples[1], views=())
    with pytest.raises(
        MMSpuBenchError, match=r"record '000001': field 'reversed': missing in a reversed run"
    ):
        check_sample_consistency([samples[0], dropped], config, "samples.jsonl")
    plain = dataclasses.replace(config, metrics=("accuracy",))
    with pytest.raises(MMSpuBenchError, match=r"field 'reversed': set, but the run did not compute reversed"):
        check_sample_consistency(samples[:1], plain, "samples.jsonl")


def _reversed_fault(answer: records.Answer, sample: records.SampleResult, config: RunConfig) -> Any:
    """The toy view's one check of its part: ``correct`` follows from the prediction and the gold letter."""
    if answer.correct is not (answer.prediction == _gold(sample.answer)):
        return "reversed.correct", f"{answer.correct!r} but prediction {answer.prediction!r}"
    return None


def test_submit_checks_a_registered_view_s_part_with_its_own_check(tmp_path: Path) -> None:
    """A view's ``check_record`` runs at submit's sample check exactly as a built-in view's does:
    one line naming the file, the record and the field the view names."""
    from mmspubench.eval.submit.checks import check_sample_consistency

    registry.register(dataclasses.replace(REVERSED, check_record=_reversed_fault))
    try:
        out = _run(tmp_path / "run", "accuracy,reversed")
        samples = results.read_finished_samples(tmp_path / "run" / "samples.jsonl")
        config = RunConfig.from_json(out["config"])
        check_sample_consistency(samples, config, "samples.jsonl")
        answer = samples[1].part("reversed")
        edited = dataclasses.replace(
            samples[1], views=(("reversed", dataclasses.replace(answer, correct=not answer.correct)),)
        )
        with pytest.raises(MMSpuBenchError) as caught:
            check_sample_consistency([samples[0], edited], config, "samples.jsonl")
    finally:
        del registry.VIEWS[REVERSED.name]
    assert str(caught.value) == (
        f"samples.jsonl: record '000001': field 'reversed.correct': {not answer.correct!r} but prediction "
        f"{answer.prediction!r}"
    )
