"""``submit`` and the leaderboard show a run's prompt variant; a ceiling run is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mmspubench.eval.prompts import prompt_spec
from mmspubench.space import leaderboard

from tests.space.fixtures import results_json, write_run

from .test_submit import _submit_dry_run, make_run, restamp, set_published_split


def test_submit_refuses_attribute_hint_and_shows_the_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_published_split(monkeypatch)
    hinted = make_run(tmp_path / "hinted", prompt_variant="attribute-hint")
    capsys.readouterr()  # the published copy's progress bar, written once
    assert _submit_dry_run(hinted, tmp_path / "out-hinted") == 2
    err = capsys.readouterr().err
    assert "field 'config.prompt_variant': 'attribute-hint' is a ceiling" in err and err.count("\n") == 1
    assert not (tmp_path / "out-hinted").exists()
    for key in ("prompt_variant", "cgla_prompt_variant"):  # an unknown name: one line, no traceback
        bogus = make_run(tmp_path / key, **{key: "bogus"})
        assert _submit_dry_run(bogus, tmp_path / "out-bogus") == 2
        assert f"field 'config.{key}': 'bogus' is not a prompt variant" in capsys.readouterr().err
    # a results.json written before variants existed has no such field: it reads as standard and submits
    old = make_run(tmp_path / "old")
    results = json.loads(old.read_text())
    del results["config"]["prompt_variant"], results["config"]["cgla_prompt_variant"]
    old.write_text(json.dumps(results))
    restamp(old)
    assert _submit_dry_run(old, tmp_path / "out-old") == 0
    out = capsys.readouterr().out
    assert "prompt variant: standard\n" in out and "prompt_variant=standard" in out
    # a fair variant submits, with its own templates checked and its name in the entries
    focus = make_run(tmp_path / "focus", prompt_variant="core-focus")
    assert _submit_dry_run(focus, tmp_path / "out-focus") == 2  # recorded the standard templates
    assert "field 'config.prompts.mcq_variant' differs" in capsys.readouterr().err
    results = json.loads(focus.read_text())
    results["config"]["prompts"] = prompt_spec("core-focus")
    focus.write_text(json.dumps(results))
    restamp(focus)
    assert _submit_dry_run(focus, tmp_path / "out-focus") == 0
    out = capsys.readouterr().out
    assert "prompt variant: core-focus\n" in out and "prompt_variant=core-focus" in out


def test_leaderboard_variant_column_marks_a_ceiling(tmp_path: Path) -> None:
    for name, variant in (("a", None), ("b", "core-focus"), ("c", "attribute-hint")):
        results = results_json(f"org/{name}", {"BG": 10.0}, 10.0, 5.0, 3)
        if variant:
            results["config"]["prompt_variant"] = variant
        write_run(tmp_path, name, results)
    frame = leaderboard.leaderboard_frame(leaderboard.load_entries(tmp_path))
    shown = dict(zip(frame["Run"], frame["Variant"], strict=True))
    assert shown == {"a": "standard", "b": "core-focus", "c": "attribute-hint (ceiling)"}
    assert "Variant" in leaderboard.view_frame(frame).columns  # shown by default
    labels = [s.label for s in leaderboard.plot_series(tmp_path, leaderboard.load_entries(tmp_path))]
    assert labels == ["org/a", "org/b", "org/c [attribute-hint (ceiling)]"]


def test_the_chart_draws_run_labels_as_text_not_mathtext(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import io

    from mmspubench.eval.analysis.plots import report_figure_object

    write_run(tmp_path, "r", results_json("./m$x^{$", {"BG": 10.0}, 10.0, 5.0, 3))
    series = leaderboard.plot_series(tmp_path, leaderboard.load_entries(tmp_path))
    figure = report_figure_object(series)
    figure.savefig(io.BytesIO(), format="png")  # mathtext would fail to parse this label
    legend = [t for t in figure.axes[0].get_legend().get_texts() if "$" in t.get_text()]
    assert [t.get_text() for t in legend] == ["m$x^{$"] and not legend[0].get_parse_math()  # as typed
