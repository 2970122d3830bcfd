from __future__ import annotations

import json
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space.cgla_view import (
    BEST_CORE,
    CORE,
    SPURIOUS,
    WINNER,
    cgl_frame,
    cgla_markdown,
    cgla_summary,
    prompts_markdown,
    read_samples,
)

from .fixtures import sample_record


def test_frame_colours_core_spurious_and_winner() -> None:
    frame = cgl_frame(sample_record())
    assert list(frame["attribute"]) == [
        "four legs",
        "furry snout",
        "sand background",
        "bright sunlight",
        "desert",
    ]
    assert list(frame["role"]) == [CORE, BEST_CORE, SPURIOUS, WINNER, SPURIOUS]
    assert list(frame["cgl"]) == [-3.0, -2.5, -4.0, -1.5, -2.0]
    assert frame["condition"].is_unique


def test_summary_hand_computed() -> None:
    record = sample_record()
    del record["cgla_min"]
    summary = cgla_summary(record)
    # best core -2.5 minus the highest spurious -1.5
    assert summary["cgla_min"] == pytest.approx(-1.0)
    assert summary["cgla_acc"] == 0
    assert summary["winning_spurious"] == "bright sunlight"
    assert summary["best_core"] == "furry snout"
    record["conditions"][3]["cgl"] = -2.75
    record["conditions"][4]["cgl"] = -2.6
    summary = cgla_summary(record)
    assert summary["cgla_min"] == pytest.approx(0.1)
    assert summary["cgla_acc"] == 1
    assert summary["winning_spurious"] == "desert"


def test_recorded_cgla_min_wins_over_best_core() -> None:
    record = sample_record()
    record["cgla_min"] = -1.25  # e.g. a mean core reduction in the run's config
    assert cgla_summary(record)["cgla_min"] == -1.25
    assert "CGLA_min = -1.2500" in cgla_markdown(record)


def test_prompts_are_shown_exactly() -> None:
    record = sample_record()
    text = prompts_markdown(record)
    for cond in record["conditions"]:
        assert cond["prompt"] in text
    assert text.count("```text\n dog\n```") == 5


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.update(conditions=[]),
        lambda r: r["conditions"][0].update(cgl=float("nan")),
        lambda r: r["conditions"][0].update(kind="other"),
        lambda r: r.update(conditions=[c for c in r["conditions"] if c["kind"] == "core"]),
    ],
)
def test_bad_records_are_refused(edit) -> None:  # type: ignore[no-untyped-def]
    record = sample_record()
    edit(record)
    with pytest.raises(MMSpuBenchError):
        cgl_frame(record)


def test_read_samples(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(sample_record("a")) + "\n\n" + json.dumps(sample_record("b")) + "\n")
    assert sorted(read_samples(path)) == ["a", "b"]
    path.write_text("{not json\n")
    with pytest.raises(MMSpuBenchError, match="line 1: not a sample record"):
        read_samples(path)


def test_axis_limits_frame_the_values() -> None:
    from mmspubench.space.cgla_view import cgl_axis_limits

    low, high = cgl_axis_limits(cgl_frame(sample_record()))
    # values span -4.0 .. -1.5: margin 0.25, top clipped at 0 only when it would cross it
    assert (low, high) == pytest.approx((-4.25, -1.25))
    record = sample_record()
    for cond in record["conditions"]:
        cond["cgl"] = -6.875
    low, high = cgl_axis_limits(cgl_frame(record))
    assert (low, high) == pytest.approx((-6.876, -6.874))
