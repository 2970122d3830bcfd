"""The Space's confound columns (Circular, Blind, Gain, Worst) and Explore's rotations and blind answer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from mmspubench.space import confound_view
from mmspubench.space.leaderboard import ALL_COLUMNS, DEFAULT_COLUMNS, confound_cells, run_entry, styled

from tests.eval.compare.test_compare_confounds import RUN_A, _items
from tests.eval.compare_fakes import write_run

OPTIONS = ("cat", "dog", "fox", "owl")


@pytest.fixture
def runs(tmp_path: Path) -> tuple[dict, dict]:
    views = write_run(tmp_path / "v", _items(RUN_A))
    plain = write_run(tmp_path / "p", _items(RUN_A, views=False))
    return json.loads((views / "results.json").read_text()), json.loads((plain / "results.json").read_text())


def test_confound_cells_from_results(runs: tuple[dict, dict]) -> None:
    views, plain = runs
    # RUN_A: circular [1, 0, 0, 1] -> 50, blind [0, 1, 0, 1] -> 50, gain 75 - 50 = 25; no type has 10 items
    assert confound_cells(views) == {"Circular": 50.0, "Blind": 50.0, "Gain": 25.0, "Worst": ""}
    cells = confound_cells(plain)
    assert all(math.isnan(cells[c]) for c in ("Circular", "Blind", "Gain")) and cells["Worst"] == ""
    worst = {**views, "accuracy": {**views["accuracy"], "worst_type": {"type": "BG", "value": 12.5}}}
    assert confound_cells(worst)["Worst"] == "BG 12.50"
    # a tie among types of >= 10 items shows both
    tie = {
        "by_type": {"BG": 12.5, "TN": 50.0, "Sha.": 12.5},
        "n_by_type": {"BG": 16, "TN": 12, "Sha.": 10},
        "worst_type": {"type": "BG", "value": 12.5},
    }
    assert confound_cells({**views, "accuracy": {**views["accuracy"], **tie}})["Worst"] == "BG/Sha. 12.50"
    assert run_entry(views, "v").row["Gain"] == 25.0
    assert {"Circular", "Blind", "Gain", "Worst"} <= set(ALL_COLUMNS) - set(DEFAULT_COLUMNS)


def test_gain_is_signed_and_a_missing_figure_empty(runs: tuple[dict, dict]) -> None:
    import pandas as pd

    frame = pd.DataFrame([run_entry(r, n).row for r, n in zip(runs, ("v", "p"), strict=True)])
    html = styled(frame[["Model", "Circular", "Gain", "Worst"]]).to_html()
    assert "+25.00" in html and "50.00" in html and "nan" not in html.lower()


def test_rotations_and_blind_of_an_item(tmp_path: Path) -> None:
    run = write_run(tmp_path / "v", _items(RUN_A))
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    item1 = records[1]  # rotations right, right, wrong (gold C, chose B), right; blind right
    rows = confound_view.rotation_rows(item1, OPTIONS)
    assert rows[0] == ["0", "A B C D", "A", "A", "cat", "✓"]
    # rotation 2 shows published C D A B at A-D: the chosen B is published D, "owl"
    assert rows[2] == ["2", "C D A B", "C", "B", "owl", "✗"]
    text = confound_view.confounds_markdown(item1, OPTIONS)
    assert "3 of 4 right: wrong under the circular rule" in text
    assert "**Blind** (without the image): A. cat (right)." in text
    assert "with a mid-grey image" in confound_view.blind_line(item1, OPTIONS, "grey")
    plain = write_run(tmp_path / "p", _items(RUN_A, views=False))
    first = json.loads((plain / "samples.jsonl").read_text().splitlines()[0])
    assert confound_view.confounds_markdown(first, OPTIONS) == ""


def test_option_texts_are_escaped_and_odd_records_do_not_crash() -> None:
    record = {"rotations": [{"rotation": 0, "order": [0, 1, 2, 9], "answer": "A", "prediction": "D"}],
              "blind": {"prediction": None, "correct": False}}  # fmt: skip
    rows = confound_view.rotation_rows(record, ("<b>x</b>", "y", "z", "w"))
    assert rows == [["0", "A B C ?", "A", "D", "—", "✗"]]
    assert "no option could be read" in confound_view.blind_line(record, OPTIONS)
    text = confound_view.confounds_markdown(
        {"blind": {"prediction": "A", "correct": True}}, ("<b>x</b>",) * 4
    )
    assert "<b>" not in text


def test_explore_reading_of_a_run_shows_the_rotations_and_blind_answer(tmp_path: Path) -> None:
    from mmspubench.eval.views.confounds.metrics import rotated_answer, rotation_order
    from mmspubench.space import handlers
    from mmspubench.space.explore import build_index
    from mmspubench.space.handlers import SpaceState

    from tests.space import fixtures

    dataset = fixtures.make_dataset()
    results = fixtures.results_json("org/a", {"BG": 50.0}, 50.0, 40.0, 3)
    results["config"]["blind_image"] = "grey"
    run = fixtures.write_run(tmp_path / "runs", "org-a", results)
    record = fixtures.sample_record("000000")  # gold B, answered A
    record["rotations"] = [
        {"rotation": k, "order": list(rotation_order(k)), "answer": rotated_answer("B", k),
         "prediction": "A", "correct": rotated_answer("B", k) == "A", "raw_output": "A", "option_scores": None}
        for k in range(4)
    ]  # fmt: skip
    record["blind"] = {"prediction": "B", "correct": True, "raw_output": "B", "option_scores": None}
    (run / "samples.jsonl").write_text(json.dumps(record) + "\n")
    state = SpaceState(dataset=dataset, dataset_label="fixture", index=build_index(dataset), board=None,
                       runs={"org-a": run / "samples.jsonl"}, series=(), models=None)  # fmt: skip
    _, text, _ = handlers.show_cgla(state, "000000", "org-a", None)
    # always "A": right only in rotation 3, where the gold B has moved to A
    assert "1 of 4 right: wrong under the circular rule" in text
    assert "| 3 | B C D A | A | A |" in text
    assert "**Blind** (with a mid-grey image): B." in text and text.startswith("From results run")
