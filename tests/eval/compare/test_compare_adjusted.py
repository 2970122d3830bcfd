"""``compare``'s adjusted p-values (Holm, Benjamini-Hochberg) against statsmodels, the marks of the
text, the interventions' changes, and several runs (every pair, adjusted across pairs, the ranks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.cli import main
from statsmodels.stats.multitest import multipletests

from tests.eval.compare.test_compare_interventions import runs  # noqa: F401  (the fixture)
from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("colorization",), ("relative_size",), ("lighting_shadows",))


def _items(right: np.ndarray) -> list[Item]:
    return [Item(f"{i:03d}", TYPES[i % len(TYPES)], bool(v)) for i, v in enumerate(right)]


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    rates = [0.45, 0.55, 0.8, 0.45]
    return [
        write_run(tmp_path / name, _items(rng.random(100) < p), model=f"model-{name}")
        for name, p in zip("abcd", rates, strict=True)
    ]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["compare", *argv, "--json", "-"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.parametrize(("option", "theirs"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_each_table_is_adjusted_as_statsmodels_does(
    folders: list[Path], capsys: pytest.CaptureFixture[str], option: str, theirs: str
) -> None:
    doc = _json(capsys, str(folders[0]), str(folders[2]), "--adjust", option)
    assert doc["adjustment"] == {"method": option, "alpha": 0.05, "family": "the groups of one table"}
    present = [g["accuracy"] for g in doc["groups"] if g["accuracy"] is not None]
    assert len(present) == 6  # overall and the five types with items: the empty types are no test
    expected = multipletests([r["p_value"] for r in present], method=theirs)[1]
    assert [r["p_adjusted"] for r in present] == pytest.approx(list(expected), abs=1e-12)


def test_the_text_marks_only_what_survives(folders: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, str(folders[0]), str(folders[1]))
    assert main(["compare", str(folders[0]), str(folders[1])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Holm p: the p-values adjusted (Holm) across the rows of each table" in lines[3]
    head = lines.index("Accuracy (%)") + 2
    assert lines[head].endswith("| McNemar p | Holm p |")
    for group, line in zip(doc["groups"], lines[head + 2 : head + 12], strict=True):
        r = group["accuracy"]
        assert line.startswith(f"| {group['group']} |")
        assert line.endswith(" * |") == (r is not None and r["p_adjusted"] < 0.05), line


def test_a_raw_win_that_does_not_survive_is_not_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # B right on 6 more background items (McNemar p = 2/64 < 0.05) and alike elsewhere
    a = np.zeros(50, dtype=bool)
    b = a.copy()
    b[[0, 5, 10, 15, 20, 25]] = True  # background items (index % 5 == 0)
    run_a, run_b = write_run(tmp_path / "a", _items(a)), write_run(tmp_path / "b", _items(b), model="m-b")
    assert main(["compare", str(run_a), str(run_b)]) == 0
    bg = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| BG |"))
    # six tests (overall and five types); overall and BG both p = 2/64, the other four p = 1:
    # Holm gives both max(6 * 2/64, 5 * 2/64) = 12/64 = 0.1875, not significant, no mark
    assert bg.endswith("| 0 | 6 | 0.0312 | 0.188 |"), bg


def test_the_interventions_changes_are_adjusted(
    runs: tuple[Path, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, *map(str, runs))
    changes = [(g.get("interventions") or {}).get("grayscale", {}).get("change") for g in doc["groups"]]
    present = [c for c in changes if c is not None]
    assert all(0.0 < c["p_value"] <= 1.0 for c in present)
    expected = multipletests([c["p_value"] for c in present], method="holm")[1]
    assert [c["p_adjusted"] for c in present] == pytest.approx(list(expected))


def test_several_runs_compare_every_pair_adjusted_across_pairs(
    folders: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(capsys, *map(str, folders))
    pairs = [(p["a"], p["b"]) for p in doc["pairs"]]
    assert pairs == [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    raw = [p["accuracy"]["p_value"] for p in doc["pairs"]]
    expected = multipletests(raw, method="holm")[1]
    assert [p["accuracy"]["p_adjusted"] for p in doc["pairs"]] == pytest.approx(list(expected))
    # each pair's figures are those of compare of the two runs
    two = _json(capsys, str(folders[0]), str(folders[2]))
    first = {k: v for k, v in two["groups"][0]["accuracy"].items() if k != "p_adjusted"}
    assert {k: v for k, v in doc["pairs"][1]["accuracy"].items() if k != "p_adjusted"} == first
    ranks = {r["name"]: (r["rank"], r["low"], r["high"]) for r in doc["ranks"]}
    assert ranks["c"] == (1, 1, 1) and doc["tied_groups"][0] == ["c"]
    assert main(["compare", *map(str, folders)]) == 0
    text = capsys.readouterr().out
    assert "| c | model-c | " in text and "Tied (overlapping rank intervals): " in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--plot", "x.png"], "--plot draws two runs; compare of more than two runs draws no figure"),
        (
            ["--b-view", "blind"],
            "--a-view and --b-view take two runs; compare of more than two runs takes none",
        ),
    ],
)
def test_several_runs_refuse_two_run_options(
    folders: list[Path], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["compare", *map(str, folders[:3]), *extra]) == 2
    err = capsys.readouterr().err
    assert err == f"mmspubench compare: error: {message}\n"
