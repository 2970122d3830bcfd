"""``report`` on runs with the interventions section: its tables, computed by hand; other runs unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval.analysis.report import markdown_table

from tests.eval.compare_fakes import Asked, Item, write_run
from tests.eval.test_report import EXPECTED, RUN_A, RUN_B

T, F = True, False
TYPES = (("background",), ("colorization",), ("colorization",), ("shape",))
# id: published answer right, right under grayscale, right under cf:cue-aligned
ROWS = [(T, T, T), (F, T, T), (F, F, T), (T, T, T)]


def _items(rows: list[tuple[bool, bool, bool]] = ROWS, cgla: bool = False) -> list[Item]:
    def asked(name: str, right: bool, i: int) -> Asked:
        return Asked(name, right, cgla_min=(1.0 if i != 2 else -1.0) if cgla else None)

    return [
        Item(
            f"{i}",
            TYPES[i],
            vanilla,
            cgla_min=(1.0 if i % 2 == 0 else -1.0) if cgla else None,
            interventions=(asked("grayscale", grey, i), asked("cf:cue-aligned", aligned, i)),
        )
        for i, (vanilla, grey, aligned) in enumerate(rows)
    ]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "a", _items())


def _report(capsys: pytest.CaptureFixture[str], *paths: Path) -> list[str]:
    assert main(["report", *map(str, paths)]) == 0
    return capsys.readouterr().out.splitlines()


MAIN, PER_TYPE, GAPS = "Interventions (", "Change per type", "Counterfactual gaps"


def _table(lines: list[str], title: str) -> list[list[str]]:
    """The header and rows of the table under the line starting with ``title`` (no rule line)."""
    start = next(k for k, line in enumerate(lines) if line.startswith(title)) + 2
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
    rows = [lines[start], *lines[start + 2 : end]]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row[1:-1])] for row in rows]


def _row(lines: list[str], first_cells: str, title: str = MAIN) -> list[str]:
    rows = _table(lines, title)
    want = [c.strip() for c in first_cells.split("|")]
    found = [row for row in rows if row[: len(want)] == want]
    assert len(found) == 1, (first_cells, rows)
    return found[0]


def _ci(value: list[float]) -> str:
    return f"[{value[0]:+.2f}, {value[1]:+.2f}]"


def test_interventions_table_by_hand(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    section = json.loads((run / "results.json").read_text())["interventions"]["by_intervention"]
    lines = _report(capsys, run)
    header = _table(lines, MAIN)[0]
    assert header[:10] == [
        "Model",
        "Intervention",
        "Targets",
        "n",
        "Accuracy",
        "Change [95% CI]",
        "McNemar p",
        "Flip rate",
        "Targeted contrast [95% CI]",
        "n targeted/other",
    ]
    assert len(header) == 10  # generate mode, no CGLA: neither gold-probability nor CGLA columns
    grey = _row(lines, "model-a | grayscale")
    # published [1, 0, 0, 1] -> grayscale [1, 1, 0, 1]: 75%, +25 pp; 1 discordant item: p = 1;
    # one answer of four changes; Col. items 1, 2 change by [100, 0] (50), the others by 0
    change = section["grayscale"]["change"]["ci95"]
    contrast = section["grayscale"]["targeted_contrast"]["ci95"]
    assert grey[2:] == [
        "Col.",
        "4",
        "75.00",
        f"+25.00 {_ci(change)}",
        "1",
        "25.00",
        f"+50.00 {_ci(contrast)}",
        "2/2",
    ]
    aligned = _row(lines, "model-a | cf:cue-aligned")
    # all right: +50 pp, 2 discordant items one way: p = 2 * (1/2)^2 = 0.5; the target (BG) is item 0,
    # which does not change; items 1-3 change by [100, 100, 0]: contrast 0 - 66.67
    assert aligned[2:5] == ["BG", "4", "100.00"] and aligned[6:8] == ["0.5", "50.00"]
    assert aligned[5].startswith("+50.00 [") and aligned[8].startswith("-66.67 [") and aligned[9] == "1/3"


def test_per_type_change_and_counterfactual_gaps_by_hand(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _report(capsys, run)
    n = "BG (n=1) | TN (n=0) | CO (n=0) | RS (n=0) | Col. (n=2) | Ori. (n=0) | LS (n=0) | PA (n=0) | Sha. (n=1)"
    groups = [c.strip() for c in n.split("|")] + ["Overall (n=4)"]
    assert _table(lines, PER_TYPE)[0] == ["Model", "Intervention", *groups]
    assert _table(lines, GAPS)[0] == ["Model", "Gap", *groups]
    grey = _row(lines, "model-a | grayscale", PER_TYPE)
    # per type: BG item 0 unchanged, Col. items 1, 2 [+100, 0] -> +50, Sha. item 3 unchanged
    assert grey[6].startswith("+50.00 [") and grey[10] == "+0.00 [+0.00, +0.00]"
    assert [grey[k] for k in (3, 4, 5, 7, 8, 9)] == ["—"] * 6
    gap = _row(lines, "model-a | cue-aligned - cue-broken", GAPS)
    # cue-aligned: Col. items 1, 2 both fixed (+100), BG and Sha. unchanged; overall +50
    assert gap[6] == "+100.00 [+100.00, +100.00]" and gap[11].startswith("+50.00 [")
    assert not any("cue-removed" in line for line in lines)  # that counterfactual did not run


def test_logprob_and_cgla_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "c", _items(cgla=True))
    lines = _report(capsys, run)
    header = _table(lines, MAIN)[0]
    assert (
        header[-2:] == ["CGLA_acc", "CGLA_acc change [95% CI]"] and "Gold prob. change [95% CI]" not in header
    )
    grey = _row(lines, "model-a | grayscale")
    # CGLA_min published [1, -1, 1, -1] -> under each intervention [1, 1, -1, 1]: 50% -> 75%, +25 pp
    assert grey[-2] == "75.00" and grey[-1].startswith("+25.00 [")


def test_gold_probability_column_in_a_logprob_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sure_a, sure_b = (0.0, -1000.0, -1000.0, -1000.0), (-1000.0, 0.0, -1000.0, -1000.0)
    items = [
        Item("0", ("background",), True, scores=sure_a, interventions=(Asked("blur", False, scores=sure_b),)),
        Item(
            "1",
            ("texture_noise",),
            False,
            scores=sure_b,
            interventions=(Asked("blur", False, scores=sure_b),),
        ),
    ]
    lines = _report(capsys, write_run(tmp_path / "lp", items))
    header = _table(lines, MAIN)[0]
    assert header[-1] == "Gold prob. change [95% CI]"
    # gold (A) probability 1 -> 0 on item 0, 0 -> 0 on item 1: mean -0.5, interval [-1, 0]
    assert _row(lines, "model-a | blur")[-1] == "-0.5000 [-1.0000, +0.0000]"


def test_runs_without_the_section_print_as_before(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert markdown_table([RUN_A, RUN_B]) == EXPECTED
    plain = {k: v for k, v in json.loads((run / "results.json").read_text()).items() if k != "interventions"}
    with_section = json.loads((run / "results.json").read_text())
    table = markdown_table([plain])
    assert "Interventions" not in table and len(table.splitlines()) == 3
    assert markdown_table([with_section]).startswith(table + "\n\nInterventions (")
    # beside another run, the main table is the one of before and that run has no intervention rows
    mixed = markdown_table([RUN_A, with_section]).splitlines()
    assert mixed[:4] == markdown_table([RUN_A, plain]).splitlines()
    assert not any(line.startswith("| org/model-a | ") for line in mixed[4:])


@pytest.mark.parametrize(
    ("section", "rows"),
    [
        ("x", 0),
        ({"by_intervention": [1]}, 0),
        ({"by_intervention": {"blur": 3}}, 0),
        ({"by_intervention": {"blur": {"change": {"gain": "big", "ci95": [1]}, "n": -1}}}, 1),
        ({"by_intervention": {"x\x1b[2J|y": {"targets": ["a|b"], "flip_rate": float("inf")}}}, 1),
    ],
)
def test_a_hand_edited_section_shows_dashes_not_a_crash(section: Any, rows: int) -> None:
    text = markdown_table([{**RUN_A, "interventions": section}])
    lines = text.splitlines()
    assert lines[:3] == EXPECTED.splitlines()[:3] and "\x1b" not in text and "inf" not in text
    if not rows:
        assert lines == EXPECTED.splitlines()[:3]  # nothing to show: the table of before
        return
    name = next(iter(section["by_intervention"]))
    targets = "a\\|b" if "targets" in section["by_intervention"][name] else "—"
    shown = "blur" if name == "blur" else "x\\x1b[2J\\|y"
    assert _table(lines, MAIN)[1] == ["org/model-a", shown, targets, *["—"] * 7]
    assert _table(lines, PER_TYPE)[1] == ["org/model-a", shown, *["—"] * 10]


def test_rows_with_other_counts_carry_their_n_in_each_cell(run: Path) -> None:
    results = json.loads((run / "results.json").read_text())
    by_name = results["interventions"]["by_intervention"]
    by_name["grayscale"]["accuracy"]["n_by_type"]["BG"] = 0  # differs from cf:cue-aligned's 1
    lines = markdown_table([results]).splitlines()
    assert _table(lines, PER_TYPE)[0][2] == "BG"  # no shared n: none in the header
    grey = _row(lines, "model-a | grayscale", PER_TYPE)
    assert grey[2] == "+0.00 [+0.00, +0.00] (n=0)" and grey[6].endswith("(n=2)") and grey[3] == "—"
    del by_name["cf:cue-aligned"]  # the gap's counts are then unknown: no n shown, never n=—
    lines = markdown_table([results]).splitlines()
    gap = _row(lines, "model-a | cue-aligned - cue-broken", GAPS)
    assert _table(lines, GAPS)[0][2] == "BG" and gap[6] == "+100.00 [+100.00, +100.00]"
    assert "n=—" not in "\n".join(lines)
