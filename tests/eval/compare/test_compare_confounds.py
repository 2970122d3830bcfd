"""``compare`` on the confound views: circular, blind, gain, Brier and ECE (paired), and a run's
blind view as a side (``--a-view``/``--b-view``); every expectation computed by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.eval.analysis.compare import confounds as cc
from mmspubench.eval.views.confounds.calibration import ece

from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("background", "shape"), ("colorization",))
SURE_A = (0.0, -1000.0, -1000.0, -1000.0)  # softmax: (1, 0, 0, 0) exactly
HALF_AB = (0.0, 0.0, -1000.0, -1000.0)  # (0.5, 0.5, 0, 0): argmax A (first of ties)
SURE_B = (-1000.0, 0.0, -1000.0, -1000.0)  # (0, 1, 0, 0)
T, F = True, False
# id: correct, rotations 1-3, blind, scores
RUN_A = [
    (T, (T, T, T), F, SURE_A),  # circular right
    (T, (T, F, T), T, HALF_AB),  # circular wrong (rotation 2)
    (F, (T, T, T), F, SURE_B),  # circular wrong (rotation 0)
    (T, (T, T, T), T, SURE_A),
]
RUN_B = [
    (T, (T, T, T), T, SURE_A),
    (T, (T, T, T), F, SURE_A),
    (T, (T, T, T), T, SURE_A),
    (T, (F, F, F), F, SURE_A),
]


def _items(rows: list[Any], *, views: bool = True) -> list[Item]:
    if not views:
        return [Item(f"{i}", TYPES[i], row[0]) for i, row in enumerate(rows)]
    return [Item(f"{i}", TYPES[i], c, rotations=r, blind=b, scores=s) for i, (c, r, b, s) in enumerate(rows)]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return write_run(tmp_path / "a", _items(RUN_A)), write_run(tmp_path / "b", _items(RUN_B), model="model-b")


def _doc(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["compare", *argv, "--json", "-"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _group(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in doc["groups"] if g["group"] == name)


def test_circular_blind_gain_by_hand(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    doc = _doc(capsys, *map(str, runs))
    overall = _group(doc, "Overall")
    # circular: A [1, 0, 0, 1] = 50%, B [1, 1, 1, 0] = 75%; A only {3}, B only {1, 2}: p = 2 * 4/8 -> 1
    c = overall["circular"]
    assert (c["a"], c["b"], c["difference"], c["only_a"], c["only_b"], c["p_value"]) == (
        50.0,
        75.0,
        25.0,
        1,
        2,
        1.0,
    )
    # blind: A [0, 1, 0, 1], B [1, 0, 1, 0]: 50% each, 2 and 2 discordant
    b = overall["blind"]
    assert (b["a"], b["b"], b["difference"], b["only_a"], b["only_b"]) == (50.0, 50.0, 0.0, 2, 2)
    # gain per item (pp): A [100, 0, 0, 0] -> 25, B [0, 100, 0, 100] -> 50
    g = overall["gain"]
    assert (g["a"], g["b"], g["difference"]) == (25.0, 50.0, 25.0)
    # per type: BG holds items 0 and 2 (A circular [1, 0], B [1, 1]); Col. holds item 3 alone
    assert (_group(doc, "BG")["circular"]["a"], _group(doc, "BG")["circular"]["b"]) == (50.0, 100.0)
    assert _group(doc, "Col.")["circular"]["difference"] == -100.0
    assert _group(doc, "Col.")["circular"]["ci95"] == [-100.0, -100.0]
    # the runs' own results.json sections agree with the comparison's sides
    res_a = json.loads((runs[0] / "results.json").read_text())
    assert res_a["circular"]["accuracy"] == c["a"] and res_a["blind"]["accuracy"] == b["a"]
    assert res_a["blind"]["gain"] == g["a"]


def test_brier_and_ece_by_hand(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    overall = _group(_doc(capsys, *map(str, runs)), "Overall")
    # A's item Brier: 0, 0.25 + 0.25, 1 + 1, 0 -> mean 0.625; B: all 0
    assert (overall["brier"]["a"], overall["brier"]["b"]) == (0.625, 0.0)
    assert overall["brier"]["difference"] == -0.625
    # A's ECE: bin 14 holds items 0, 2, 3 (2 hits, confidence 3), bin 7 item 1 (1 hit, 0.5): 1.5 / 4
    assert overall["ece"]["a"] == pytest.approx(0.375) and overall["ece"]["b"] == 0.0
    assert overall["ece"]["difference"] == pytest.approx(-0.375)
    res_a = json.loads((runs[0] / "results.json").read_text())
    assert res_a["calibration"]["brier"] == pytest.approx(0.625)
    assert res_a["calibration"]["ece"] == pytest.approx(overall["ece"]["a"])


def test_markdown_tables_of_the_views(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *map(str, runs)]) == 0
    text = capsys.readouterr().out
    assert "Circular accuracy (%" in text and "| Overall | 4 | 50.00 | 75.00 | +25.00 [" in text
    assert "Blind accuracy (%" in text and "Gain of the image" in text
    assert "| Overall | 4 | 25.00 | 50.00 | +25.00 [" in text  # the gain table
    assert "| Overall | 4 | 0.625 | 0.000 | -0.625 [" in text and "0.375 | 0.000 | -0.375 [" in text


def test_the_resampled_ece_is_the_ece_of_each_resample() -> None:
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(4), size=40)
    gold = rng.integers(0, 4, size=40)
    draws = rng.integers(0, 40, size=(30, 40))
    fast = cc._ece_of_resamples(probs, gold, draws)
    assert fast == pytest.approx([ece(probs[d], gold[d]) for d in draws], abs=1e-12)


def test_runs_without_the_views_compare_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", _items(RUN_A, views=False))
    b = write_run(tmp_path / "b", _items(RUN_B))  # B has every view, A none: none is compared
    doc = _doc(capsys, str(a), str(b))
    assert all(set(g) == {"group", "n", "accuracy", "cgla_acc", "cgla_min"} for g in doc["groups"])
    assert "view" not in doc["a"] and "view" not in doc["config_differences"]
    assert main(["compare", str(a), str(b)]) == 0
    assert "Circular" not in capsys.readouterr().out


def test_the_blind_view_of_a_run_against_the_run(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = runs[0]
    res = json.loads((run / "results.json").read_text())
    seed = str(res["config"]["seed"])
    doc = _doc(capsys, str(run), str(run), "--b-view", "blind", "--seed", seed)
    acc = _group(doc, "Overall")["accuracy"]
    # with the image [1, 1, 0, 1] = 75%, blind [0, 1, 0, 1] = 50%: right with the image only {0}
    assert (acc["a"], acc["b"], acc["difference"], acc["only_a"], acc["only_b"]) == (75.0, 50.0, -25.0, 1, 0)
    # the run's own gain is A - B of this comparison, its interval and McNemar p the same
    assert res["blind"]["gain"] == -acc["difference"] and res["blind"]["gain_p_value"] == acc["p_value"]
    assert res["blind"]["gain_ci95"] == pytest.approx([-acc["ci95"][1], -acc["ci95"][0]])
    assert doc["b"]["view"] == "blind (no image)" and doc["config_differences"]["view"] == ["image", "blind"]
    assert _group(doc, "Overall")["cgla_acc"] is None and "circular" not in _group(doc, "Overall")
    # the blind view's calibration: softmax of the blind scores (none were recorded: no Brier)
    assert "brier" not in _group(doc, "Overall")


def test_both_blind_views_compare_the_blind_accuracies(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    plain = _doc(capsys, *map(str, runs))
    blind = _doc(capsys, *map(str, runs), "--a-view", "blind", "--b-view", "blind")
    assert [g["accuracy"] for g in blind["groups"]] == [g.get("blind") for g in plain["groups"]]


def test_a_blind_view_of_a_run_without_blind_answers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", _items(RUN_A, views=False))
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(a), "--a-view", "blind", "--json", str(out)]) == 2
    err = capsys.readouterr()
    assert err.out == "" and err.err.count("\n") == 1 and "Traceback" not in err.err
    assert "--a-view blind" in err.err and "record '0'" in err.err and "accuracy,blind" in err.err
    assert not out.exists()
    with pytest.raises(SystemExit):
        main(["compare", str(a), str(a), "--b-view", "grey"])


def test_compare_plot_draws_the_view_panels(runs: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert main(["compare", *map(str, runs), "--plot", str(tmp_path / "c.svg")]) == 0
    svg = (tmp_path / "c.svg").read_text()
    for title in (
        "Circular accuracy (all four rotations right)",
        "Blind accuracy (no image)",
        "Gain of the image",
    ):
        assert title in svg, title
    assert (
        main(["compare", str(runs[0]), str(runs[0]), "--b-view", "blind", "--plot", str(tmp_path / "v.svg")])
        == 0
    )
    assert "blind (no image)" in (tmp_path / "v.svg").read_text()


def _tamper(run: Path, line: int, edit: Any) -> None:
    path = run / "samples.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines[line])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r.update(rotations=[]), "'rotations'"),  # all([]) would count it right
        (lambda r: r["rotations"][2].update(correct=True), "'rotations.correct'"),
        (lambda r: r["blind"].update(correct=True), "'blind.correct'"),
        (lambda r: r.update(option_probs=[0.5, 0.5, 0.5]), "'option_probs'"),
    ],
)
def test_edited_view_records_are_refused(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], edit: Any, field: str
) -> None:
    _tamper(runs[0], 1, edit)  # item 1: rotation 2 wrong, blind right
    if "blind" in field:
        _tamper(runs[0], 0, edit)  # item 0's blind answer is wrong: marking it right is the edit
    assert main(["compare", *map(str, runs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err and "Traceback" not in err
