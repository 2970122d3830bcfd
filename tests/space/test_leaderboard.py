from __future__ import annotations

import math
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.space.leaderboard import (
    TYPE_COLUMNS,
    leaderboard_frame,
    load_entries,
    model_link,
    type_comparison_frame,
    view_frame,
)

from .fixtures import results_json, write_run


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    full = dict(zip(TYPE_COLUMNS, [50.0, 40.0, 60.0, 30.0, 70.0, 20.0, 80.0, 10.0, 90.0], strict=True))
    write_run(tmp_path, "org-a", results_json("org/model-a", full, 52.0, 40.0, 100))
    write_run(
        tmp_path, "nested/local", results_json("./local-model", {"BG": 70.0, "TN": 80.0}, 75.0, 60.0, 10)
    )
    write_run(
        tmp_path,
        "org-b",
        results_json("org/model-b", {abbrev: 25.0 for abbrev in TYPE_COLUMNS}, 25.0, 10.0, 100),
    )
    return tmp_path


def test_rows_and_average(results_dir: Path) -> None:
    frame = leaderboard_frame(load_entries(results_dir))
    assert list(frame["Run"]) == ["nested/local", "org-a", "org-b"]
    # Average = mean of the types present: (70+80)/2 and (50+...+90)/9
    assert list(frame["Average"]) == [75.0, 50.0, 25.0]
    assert frame.loc[0, "Model"] == "local-model"  # a local model by its folder name
    assert frame.loc[1, "Model"] == "[org/model-a](https://huggingface.co/org/model-a)"
    assert math.isnan(frame.loc[0, "CO"])
    assert list(frame["n"]) == [10, 100, 100]
    assert frame.loc[1, "Date"] == "2026-11-30"


def test_sort_search_and_columns(results_dir: Path) -> None:
    frame = leaderboard_frame(load_entries(results_dir))
    by_co = view_frame(frame, sort_by="CO", ascending=True)
    assert list(by_co["Model"].str.contains("model-b")) == [True, False, False]
    assert "local" in by_co.loc[2, "Model"]  # missing figure last either way
    by_cgla = view_frame(frame, sort_by="CGLA_acc", ascending=False)
    assert [float(x) for x in by_cgla["CGLA_acc"]] == [60.0, 40.0, 10.0]
    found = view_frame(frame, query="MODEL-A")
    assert len(found) == 1 and "model-a" in found.loc[0, "Model"]
    narrow = view_frame(frame, columns=["BG", "n"])
    assert list(narrow.columns) == ["Model", "BG", "n"]
    with pytest.raises(MMSpuBenchError, match="unknown leaderboard column 'XYZ'"):
        view_frame(frame, columns=["XYZ"])
    with pytest.raises(MMSpuBenchError, match="cannot sort by 'nope'"):
        view_frame(frame, sort_by="nope")


def test_type_comparison_long_format(results_dir: Path) -> None:
    long = type_comparison_frame(leaderboard_frame(load_entries(results_dir)))
    assert len(long) == 2 + 9 + 9
    assert set(long["model"]) == {"local-model", "org/model-a", "org/model-b"}
    row = long[(long["model"] == "org/model-a") & (long["type"] == "Sha.")]
    assert float(row["accuracy"].iloc[0]) == 90.0


def test_model_link() -> None:
    assert model_link("a/b") == "[a/b](https://huggingface.co/a/b)"
    assert model_link("/abs/path/tiny-llava-biased") == "tiny-llava-biased"  # never an absolute path
    assert model_link("./models/mine") == "mine"
    assert model_link("bundled") == "bundled"


def test_scorer_column_shows_what_ran(tmp_path: Path) -> None:
    from .fixtures import results_json

    fell_back = results_json("org/m", {"BG": 10.0}, 10.0, 5.0, 3)
    fell_back["model"].update(scorer_used="plain", scorer_fallback_reason="family not verified")
    write_run(tmp_path, "a", fell_back)
    fast = results_json("org/n", {"BG": 20.0}, 20.0, 5.0, 3)
    fast["model"].update(scorer_used="fast", scorer_fallback_reason=None)
    write_run(tmp_path, "b", fast)
    frame = leaderboard_frame(load_entries(tmp_path))
    assert list(frame["Scorer"]) == ["fast", "plain (fast not used: family not verified)"]
    assert list(frame["Average"]) == [20.0, 10.0]  # read from results.json


def test_missing_or_bad_results(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match="does not exist"):
        load_entries(tmp_path / "nope")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text("[")
    with pytest.raises(MMSpuBenchError, match="cannot read results"):
        load_entries(tmp_path)


def test_results_from_an_unreachable_hub_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    from mmspubench.space.leaderboard import resolve_results

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MMSpuBenchError, match="results 'org/no-such-results': not a local folder"):
        resolve_results("org/no-such-results")


def test_accuracy_only_run_is_marked(tmp_path: Path) -> None:
    """An API run without prompt log-probabilities: no CGLA_acc, "(accuracy only)" in the Mode column."""
    results = results_json("gpt-4o", {"BG": 60.0}, 60.0, 0.0, 10)
    results["cgla"], results["accuracy_only"] = None, True
    write_run(tmp_path, "api", results)
    write_run(tmp_path, "full", results_json("org/model-a", {"BG": 50.0}, 50.0, 40.0, 10))
    frame = leaderboard_frame(load_entries(tmp_path))
    assert list(frame["Run"]) == ["api", "full"]
    assert frame.loc[0, "Mode"].endswith("(accuracy only)") and math.isnan(frame.loc[0, "CGLA_acc"])
    assert not frame.loc[1, "Mode"].endswith("(accuracy only)")


def test_one_number_format_two_decimals_and_columns_share_the_width(results_dir: Path) -> None:
    """The page shows every figure with two decimals (``50.00`` beside ``38.89``), a missing one
    empty, and the shown columns' widths add up to the table's width (never cut on the right)."""
    from mmspubench.space.board_widths import column_widths
    from mmspubench.space.leaderboard import DEFAULT_COLUMNS, styled

    shown = view_frame(leaderboard_frame(load_entries(results_dir)))
    html_table = styled(shown).to_html()
    assert ">50.00<" in html_table and ">25.00<" in html_table and ">nan<" not in html_table.lower()
    assert ">50<" not in html_table and ">50.0<" not in html_table
    for columns in (list(DEFAULT_COLUMNS), ["Model", "BG"], list(shown.columns)):
        widths = column_widths(columns)
        assert len(widths) == len(columns) and sum(float(w.rstrip("%")) for w in widths) == pytest.approx(
            100, abs=0.05
        )
