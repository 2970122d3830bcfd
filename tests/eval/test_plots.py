"""``report --plot`` and ``compare --plot``: real PNG and SVG files; plot data; a missing extra."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval import metrics
from mmspubench.eval.analysis.plot_data import REPORT_GROUPS, report_series, run_labels
from mmspubench.eval.results import read_finished_samples, read_results

from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("background", "texture_noise"), ("colorization",), ("orientation",))


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    a = [Item(f"{i:03d}", TYPES[i % 5], i % 3 != 0, cgla_min=(i % 4) - 1.5) for i in range(30)]
    b = [Item(x.id, x.types, i % 2 == 0, cgla_min=(i % 5) - 1.0) for i, x in enumerate(a)]
    return write_run(tmp_path / "a", a, model="model-a"), write_run(tmp_path / "b", b, model="model-b")


def _check_png(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as image:
        assert image.format == "PNG"
        width, height = image.size
    assert 500 <= width <= 3000 and 300 <= height <= 3000, (width, height)


def _check_svg(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    assert path.stat().st_size > 5_000  # bars, ticks and text, not an empty canvas


def test_report_plot_writes_png_and_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    a, b = _runs(tmp_path)
    assert main(["report", str(a), str(b / "results.json"), "--plot", str(tmp_path / "r.png")]) == 0
    assert "| model-a |" in capsys.readouterr().out
    _check_png(tmp_path / "r.png")
    assert main(["report", str(a), str(b), "--plot", str(tmp_path / "r.svg")]) == 0
    _check_svg(tmp_path / "r.svg")
    svg = (tmp_path / "r.svg").read_text()
    for label in ("BG", "Sha.", "Overall", "model-a", "model-b", "CGLA_acc"):
        assert label in svg, label


def test_compare_plot_writes_png_and_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    a, b = _runs(tmp_path)
    for name, check in (("c.png", _check_png), ("c.svg", _check_svg)):
        assert main(["compare", str(a), str(b), "--plot", str(tmp_path / name), "--resamples", "100"]) == 0
        check(tmp_path / name)
    assert "nats" in (tmp_path / "c.svg").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_missing_matplotlib_names_the_extra_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _runs(tmp_path)
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    for argv in (
        ["report", str(a), "--plot", str(tmp_path / "r.png")],
        ["compare", str(a), str(b), "--json", str(tmp_path / "c.json"), "--plot", str(tmp_path / "c.png")],
    ):
        assert main(argv) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1
        assert "pip install 'mm-spubench[plot]'" in out.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_report_plot_refuses_another_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = _runs(tmp_path)
    assert main(["report", str(a), "--plot", str(tmp_path / "r.pdf")]) == 2
    assert ".png or .svg" in capsys.readouterr().err


def test_report_series_takes_results_intervals_and_computes_cgla_ones_from_samples(tmp_path: Path) -> None:
    a, _ = _runs(tmp_path)
    results = read_results(a / "results.json")
    samples = read_finished_samples(a / "samples.jsonl")
    series = report_series(results, samples, "A")
    bg = REPORT_GROUPS.index("BG")
    assert series.accuracy[bg] == results["accuracy"]["by_type"]["BG"]
    assert series.accuracy_ci95[bg] == tuple(results["accuracy"]["ci95"]["by_type"]["BG"])
    bg_hits = [bool(s.cgla_acc) for s in samples if "background" in s.types]
    assert series.cgla_acc_ci95[bg] == metrics.bootstrap_ci(bg_hits, 0)
    assert series.cgla_acc[-1] == results["cgla"]["acc"]
    # A type without items has no bar and no interval; without samples, no CGLA interval.
    co = REPORT_GROUPS.index("CO")
    assert series.accuracy[co] is None and series.accuracy_ci95[co] is None
    bare = report_series(results, None, "A")
    assert bare.cgla_acc_ci95[bg] is None and bare.accuracy_ci95[bg] == series.accuracy_ci95[bg]


def test_report_series_computes_accuracy_intervals_a_results_file_lacks(tmp_path: Path) -> None:
    a, _ = _runs(tmp_path)
    results = json.loads((a / "results.json").read_text())
    del results["accuracy"]["ci95"]
    samples = read_finished_samples(a / "samples.jsonl")
    series = report_series(results, samples, "A")
    shape = [bool(s.correct) for s in samples if "shape" in s.types]
    assert series.accuracy_ci95[REPORT_GROUPS.index("Sha.")] == metrics.bootstrap_ci(shape, 0)


def test_labels_tell_runs_of_one_model_apart() -> None:
    run = {"model": {"id": "/m/tiny"}, "config": {"answer_mode": "generate"}}
    other = {"model": {"id": "/m/tiny"}, "config": {"answer_mode": "logprob", "prompt_variant": "reasoning"}}
    assert run_labels([run, other], [Path("x"), Path("y")]) == [
        "tiny [standard, generate]",
        "tiny [reasoning, logprob]",
    ]
    assert run_labels([run, run], [Path("x"), Path("y")])[1] == "tiny [standard, generate] (y)"
    assert run_labels([run], [Path("x")]) == ["tiny"]


def _drawn(series: list[Any], field: int = 0) -> Any:
    pytest.importorskip("matplotlib")
    from mmspubench.eval.analysis.plots import report_figure_object

    return report_figure_object(series).axes[field]


def _flat(label: str, first: float | None, mode: str | None = "generate") -> Any:
    from mmspubench.eval.analysis.plot_data import Series

    values = (first, *([50.0] * (len(REPORT_GROUPS) - 1)))
    return Series(label, values, (None,) * len(values), values, (None,) * len(values), (), mode)


def test_a_zero_bar_is_drawn_and_a_missing_one_is_not() -> None:
    """A 0.00 figure drew no bar, which read as missing: it gets a stroke and a ``0``; a missing one
    keeps its ``—``."""
    ax = _drawn([_flat("zero", 0.0), _flat("none", None)])
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("0") == 1 and texts.count("—") == 1
    strokes = [c for c in ax.collections if c.get_linewidth()[0] == 2.5]
    assert len(strokes) == 1 and strokes[0].get_segments()[0][0][1] == 0.0


def test_the_figure_says_the_answer_mode() -> None:
    """One run (or runs of one mode): the panels' titles name it; modes that differ: each label."""
    ax = _drawn([_flat("m", 40.0, "logprob")])
    assert ax.get_title() == "Accuracy per spurious type (bootstrap 95% CI, answer mode: logprob)"
    assert ax.get_legend().get_texts()[0].get_text() == "m"
    mixed = _drawn([_flat("a", 40.0, "logprob"), _flat("b [standard, generate]", 40.0, "generate")])
    assert mixed.get_title() == "Accuracy per spurious type (bootstrap 95% CI)"
    assert [t.get_text() for t in mixed.get_legend().get_texts()] == ["a [logprob]", "b [standard, generate]"]
    # a run recording no mode (older results): titles as before
    assert _drawn([_flat("m", 40.0, None)]).get_title() == "Accuracy per spurious type (bootstrap 95% CI)"


def test_report_series_reads_the_answer_mode(tmp_path: Path) -> None:
    run = write_run(tmp_path / "a", [Item(f"{i}", ("background",), True) for i in range(3)])
    results = read_results(run / "results.json")
    assert report_series(results, None, "A").answer_mode == results["config"]["answer_mode"]
