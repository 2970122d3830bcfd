"""The leaderboard's interventions columns (TC NAME, CF gap): figures from results.json, blank where a
run lacks them, re-checked against the samples, signed, and never wrapped mid-number."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pytest
from mmspubench.space import board_widths, hub_leaderboard
from mmspubench.space.leaderboard import (
    ALL_COLUMNS,
    DEFAULT_COLUMNS,
    INTERVENTION_COLUMNS,
    load_entries,
    styled,
    view_frame,
)

from . import intervention_runs
from .test_board_partial import write_run

CONTRASTS = ("TC grayscale", "TC blur", "TC equalize", "TC noise")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _board(root: Path) -> tuple[Any, str]:
    frame, note = hub_leaderboard.board(root, load_entries(root), "mmbench/MM-SpuBench")
    return frame, html.unescape(note)


def test_the_columns_are_offered_not_shown_by_default() -> None:
    assert (*CONTRASTS, "CF gap") == INTERVENTION_COLUMNS
    assert set(INTERVENTION_COLUMNS) <= set(ALL_COLUMNS) - set(DEFAULT_COLUMNS)


def test_contrasts_and_the_gap_come_from_the_run_and_are_blank_where_it_lacks_them(tmp_path: Path) -> None:
    intervention_runs.write(tmp_path, "iv")
    write_run(tmp_path, "plain", range(20), "2026-01-01T00:00:00+00:00")
    frame, note = _board(tmp_path)
    rows = {run: row for run, row in zip(frame["Run"], frame.to_dict("records"), strict=True)}
    assert set(rows) == {"iv", "plain"}, note
    iv = rows["iv"]
    # grayscale: Col. items 4 (right already) and 13 (wrong -> right): +50 points; the other 18 items
    # lose item 2 (right -> wrong): -100/18 points. Contrast = 50 + 100/18.
    assert iv["TC grayscale"] == pytest.approx(50.0 + 100.0 / 18.0)
    assert iv["TC blur"] == 0.0  # every answer as published: no change on either group
    assert math.isnan(iv["TC equalize"]) and math.isnan(iv["TC noise"])  # not asked: blank
    assert iv["CF gap"] == pytest.approx(60.0)  # 100% on cue-aligned minus 40% published
    assert all(math.isnan(rows["plain"][c]) for c in INTERVENTION_COLUMNS)
    shown = view_frame(frame, columns=["Model", *INTERVENTION_COLUMNS], sort_by="TC grayscale")
    assert list(shown.columns) == ["Model", *INTERVENTION_COLUMNS]
    cells = styled(shown).to_html()
    assert "+55.56" in cells and "+0.00" in cells and "+60.00" in cells


def test_a_cf_only_run_has_the_gap_and_no_contrast(tmp_path: Path) -> None:
    intervention_runs.write(tmp_path, "cf", names=("cf:cue-aligned",))
    frame, note = _board(tmp_path)
    assert frame.loc[0, "CF gap"] == pytest.approx(60.0), note
    assert all(math.isnan(frame.loc[0, c]) for c in CONTRASTS)


def test_no_figure_or_header_word_of_the_columns_wraps(tmp_path: Path) -> None:
    intervention_runs.write(tmp_path, "iv")
    frame, _ = _board(tmp_path)
    frame.loc[0, "TC grayscale"] = -187.5  # the widest a contrast can be: -100 minus +100, nearly
    columns = ["Model", *INTERVENTION_COLUMNS, "Average"]
    widths = board_widths.column_widths(columns, frame)
    pixels = {
        c: float(w.rstrip("%")) * board_widths.TABLE_PX / 100 for c, w in zip(columns, widths, strict=True)
    }
    assert board_widths.shown_text("TC grayscale", -187.5) == "-187.50"
    assert board_widths.shown_text("CF gap", 60.0) == "+60.00"
    for column in INTERVENTION_COLUMNS:
        longest = max(
            len(w) for w in [*column.split(), *(board_widths.shown_text(column, v) for v in frame[column])]
        )
        assert pixels[column] >= longest * board_widths.CHAR_PX + 2 * board_widths.PAD_PX, column


def _edit(path: Path, *keys: str, value: Any) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    at = doc
    for key in keys[:-1]:
        at = at[key]
    at[keys[-1]] = value
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_forged_contrast_or_gain_of_a_run_with_samples_leaves_it_out(tmp_path: Path) -> None:
    folder = intervention_runs.write(tmp_path, "iv")
    write_run(tmp_path, "ok", range(20), "2026-01-01T00:00:00+00:00")
    field = ("interventions", "by_intervention", "grayscale", "targeted_contrast", "value")
    _edit(folder / "results.json", *field, value=90.0)
    frame, note = _board(tmp_path)
    assert list(frame["Run"]) == ["ok"]
    assert f"run iv left out: {folder / 'results.json'}: field '{'.'.join(field)}'" in note
    # A blind section the run never computed: its Gain was shown unchecked beside re-checked figures.
    blind = write_run(tmp_path, "blind", range(20), "2026-01-02T00:00:00+00:00", model="org/b")
    _edit(blind / "results.json", "blind", value={"accuracy": 50.0, "gain": 80.0})
    frame, note = _board(tmp_path)
    assert list(frame["Run"]) == ["ok"] and "run blind left out" in note and "field 'blind'" in note


@pytest.mark.parametrize(
    ("keys", "value", "said"),
    [
        (
            ("by_intervention", "noise", "targeted_contrast", "value"),
            1e308,
            "is outside [-200, 200] (points)",
        ),
        (("by_intervention", "blur", "targeted_contrast", "value"), -math.inf, "value -inf is outside"),
        (("counterfactual_gaps", "aligned_minus_broken", "gain"), 150.0, "is outside [-100, 100] (points)"),
    ],
)
def test_an_impossible_figure_of_a_run_without_samples_leaves_it_out(
    tmp_path: Path, keys: tuple[str, ...], value: float, said: str
) -> None:
    folder = intervention_runs.write(tmp_path, "iv")
    (folder / "samples.jsonl").unlink()  # nothing to recompute from: the figures' bounds still hold
    doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    at = doc["interventions"]
    for key in keys[:-1]:
        at = at.setdefault(key, {})
    at[keys[-1]] = value
    (folder / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    write_run(tmp_path, "ok", range(20), "2026-01-01T00:00:00+00:00")
    frame, note = _board(tmp_path)
    assert list(frame["Run"]) == ["ok"] and "run iv left out" in note and said in note, note
    assert f"field 'interventions.{'.'.join(keys)}'" in note
