"""``report``'s ranks and detectable differences, recomputed from the runs' samples.jsonl."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.eval.analysis.stats import mdd_paired, mdd_unpaired, rank_intervals

from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("relative_size",), ("background", "shape"))


def _write(folder: Path, right: np.ndarray, model: str) -> Path:
    items = [Item(f"{i:03d}", TYPES[i % len(TYPES)], bool(v)) for i, v in enumerate(right)]
    return write_run(folder, items, model=model)


@pytest.fixture
def matrix() -> np.ndarray:
    rng = np.random.default_rng(11)
    return rng.random((3, 60)) < np.array([[0.9], [0.5], [0.5]])


def _lines(capsys: pytest.CaptureFixture[str], *paths: Path) -> list[str]:
    assert main(["report", *map(str, paths)]) == 0
    return capsys.readouterr().out.splitlines()


def test_report_ranks_the_runs_with_their_intervals(
    tmp_path: Path, matrix: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [_write(tmp_path / n, row, f"m-{n}") for n, row in zip(("hi", "lo1", "lo2"), matrix, strict=True)]
    lines = _lines(capsys, *paths)
    expected = rank_intervals(["hi", "lo1", "lo2"], matrix.astype(float), seed=0)
    at = next(i for i, line in enumerate(lines) if line.startswith("Ranks by accuracy"))
    assert lines[at + 2].startswith("| Run | Overall | BG | TN |")
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1] for line in lines[at + 4 : at + 7]}
    assert rows == {r.name: r.label() for r in expected}
    assert rows["hi"] == "1 [1, 1]"
    prefix = "Tied groups (overlapping rank intervals, overall): "
    assert lines[at + 8].startswith(prefix)
    assert set(lines[at + 8].removeprefix(prefix).split(" = ")) == {"lo1", "lo2"}


def test_report_gives_each_type_its_detectable_difference(
    tmp_path: Path, matrix: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [_write(tmp_path / n, row, f"m-{n}") for n, row in zip("abc", matrix, strict=True)]
    lines = _lines(capsys, *paths)
    rs = next(line for line in lines if line.startswith("| RS | 15 |"))
    data = matrix[:, 2::4].astype(float)  # the relative-size items
    share = np.mean([np.mean(data[i] != data[j]) for i, j in ((0, 1), (0, 2), (1, 2))])
    rate = 100 * data.mean()
    unpaired, paired = mdd_unpaired(15, rate), mdd_paired(15, float(share))
    assert unpaired is not None and paired is not None
    assert rs == f"| RS | 15 | {rate:.1f} | {unpaired:.1f} | {100 * share:.1f} | {paired:.1f} |"
    assert next(line for line in lines if line.startswith("| TN |")) == "| TN | 0 | — | — | — | — |"


def test_one_run_gets_the_unpaired_figures_only(
    tmp_path: Path, matrix: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(capsys, _write(tmp_path / "a", matrix[0], "m"))
    assert not any(line.startswith("Ranks by accuracy") for line in lines)
    overall = next(line for line in lines if line.startswith("| Overall | 60 |"))
    assert overall.endswith("| — | — |")


def test_runs_on_other_items_get_a_note(
    tmp_path: Path, matrix: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _write(tmp_path / "a", matrix[0], "m-a")
    b = _write(tmp_path / "b", matrix[1][:50], "m-b")
    lines = _lines(capsys, a, b)
    assert lines[-1] == (
        "No ranks or detectable differences: the runs do not hold the same items with their accuracy"
    )


def test_report_plot_draws_the_rank_intervals(tmp_path: Path, matrix: np.ndarray) -> None:
    pytest.importorskip("matplotlib")
    paths = [_write(tmp_path / n, row, f"m-{n}") for n, row in zip("abc", matrix, strict=True)]
    assert main(["report", *map(str, paths), "--plot", str(tmp_path / "r.svg")]) == 0
    svg = (tmp_path / "r.svg").read_text(encoding="utf-8")
    assert "rank by accuracy (1 = best)" in svg and "Rank with its 95% interval" in svg
    assert main(["report", str(paths[0]), "--plot", str(tmp_path / "one.svg")]) == 0
    assert "rank by accuracy" not in (tmp_path / "one.svg").read_text(encoding="utf-8")
