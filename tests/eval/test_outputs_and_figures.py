"""No output names an input (compare, report, submit --dry-run); a NaN in a samples file is one line;
figures draw every text as text, say which file they wrote, show chance, per-type n and why CGLA
is missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.eval.analysis.plot_data import REPORT_GROUPS, report_series
from mmspubench.eval.results import read_finished_samples, read_results

from tests.eval.compare_fakes import Item, write_run

TYPES = (("background",), ("shape",), ("background", "texture_noise"), ("colorization",), ("orientation",))
EXPECTED_N = {
    "BG": 12,
    "TN": 6,
    "CO": 0,
    "RS": 0,
    "Col.": 6,
    "Ori.": 6,
    "LS": 0,
    "PA": 0,
    "Sha.": 6,
    "Overall": 30,
}
"""Hand count of :func:`_runs`: 30 items cycling through TYPES (BG in two of the five)."""


def _runs(
    tmp_path: Path, cgla: bool = True, model_a: str = "model-a", model_b: str = "model-b"
) -> tuple[Path, Path]:
    a = [
        Item(f"{i:03d}", TYPES[i % 5], i % 3 != 0, cgla_min=(i % 4) - 1.5 if cgla else None)
        for i in range(30)
    ]
    b = [Item(x.id, x.types, i % 2 == 0, cgla_min=(i % 5) - 1.0 if cgla else None) for i, x in enumerate(a)]
    return write_run(tmp_path / "a", a, model=model_a), write_run(tmp_path / "b", b, model=model_b)


def _snapshot(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for f in folders for p in sorted(f.rglob("*")) if p.is_file()}


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1, (out.out[:500], out.err[:2000])
    assert "Traceback" not in out.err
    return out.err


def test_compare_outputs_never_name_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _runs(tmp_path)
    os.symlink(a / "samples.jsonl", tmp_path / "link.jsonl")
    os.link(a / "results.json", tmp_path / "hard.json")
    before = _snapshot(a, b)
    cases = [
        ["--json", str(a / "samples.jsonl")],
        ["--json", str(b / "results.json")],
        ["--json", str(b / ".." / "a" / "samples.jsonl")],
        ["--json", str(a / "comparison.json")],  # a new file inside an input run
        ["--json", str(a)],
        ["--json", str(tmp_path / "link.jsonl")],  # a symlink to an input
        ["--json", str(tmp_path / "hard.json")],  # a hard link of an input
        ["--plot", str(a / "samples.png")],
        ["--plot", str(tmp_path / "c.png"), "--json", str(tmp_path / "c.png")],
    ]
    for extra in cases:
        assert main(["compare", str(a), str(b), "--resamples", "50", *extra]) == 2, extra
        err = _one_line(capsys)
        assert "an output never replaces or joins what the command reads" in err, err
    # inputs named by their results.json: the run files beside it count as inputs too
    assert main(["compare", str(a / "results.json"), str(b), "--json", str(a / "samples.jsonl")]) == 2
    _one_line(capsys)
    assert _snapshot(a, b) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "hard.json", "link.jsonl"]


def test_report_plot_and_submit_dry_run_never_name_an_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _runs(tmp_path)
    before = _snapshot(a, b)
    for argv in (
        ["report", str(a), str(b), "--plot", str(b / "bars.png")],
        ["report", str(a / "results.json"), "--plot", str(a / "samples.jsonl.png")],
        ["report", str(a), "--plot", str(tmp_path / "a" / "results.svg")],
        ["submit", str(a / "results.json"), "--model-repo", "org/m", "--dry-run", str(a)],
        ["submit", str(a / "results.json"), "--model-repo", "org/m", "--dry-run", str(tmp_path)],
    ):
        assert main(argv) == 2, argv
        assert "an output never replaces or joins" in _one_line(capsys)
    assert _snapshot(a, b) == before


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400, "true", '"1.5"'])
def test_a_non_finite_cgla_min_is_one_line_naming_file_record_and_field(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _runs(tmp_path)
    path = a / "samples.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    record, original = json.loads(lines[3]), lines[3]
    lines[3] = lines[3].replace(f'"cgla_min": {json.dumps(record["cgla_min"])}', f'"cgla_min": {value}')
    assert lines[3] != original
    path.write_text("".join(lines))
    for argv in (
        ["compare", str(a), str(b), "--resamples", "50"],
        ["compare", str(b), str(a), "--json", str(tmp_path / "c.json")],
        ["report", str(a), "--plot", str(tmp_path / "r.png")],
    ):
        assert main(argv) == 2, argv
        err = _one_line(capsys)
        assert str(path) in err and "line 4" in err and "record '003'" in err and "'cgla_min'" in err, err
        assert "finite number" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


@pytest.mark.parametrize("model", [r"$\undefinedcommand$", "x$^{$y", "a$b$c$", r"\$100 $x_1$"])
def test_figures_draw_model_ids_as_plain_text(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    a, b = _runs(tmp_path, model_a=model, model_b=f"{model}-b")
    assert main(["compare", str(a), str(b), "--resamples", "50", "--plot", str(tmp_path / "c.svg")]) == 0
    assert main(["report", str(a), str(b), "--plot", str(tmp_path / "r.svg")]) == 0
    capsys.readouterr()
    for name in ("c.svg", "r.svg"):
        svg = (tmp_path / name).read_text()
        assert model in svg, name  # the text as typed: no mathtext, no escape shown


def test_every_text_of_the_report_figure_is_plain(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text
    from mmspubench.eval.analysis.plots import report_figure_object

    a, _ = _runs(tmp_path)
    series = report_series(
        read_results(a / "results.json"), read_finished_samples(a / "samples.jsonl"), "$x$"
    )
    fig = report_figure_object([series])
    texts = fig.findobj(Text)
    assert any(t.get_text() == "$x$" for t in texts)  # the legend, unescaped
    assert texts and not [t for t in texts if t.get_parse_math()]


def test_plots_say_which_file_they_wrote_and_a_folder_name_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    a, b = _runs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["report", str(a), "--plot", str(out / "r.png")]) == 0
    got = capsys.readouterr()
    assert f"mmspubench report: wrote the figure {out / 'r.png'}" in got.err and "| model-a |" in got.out
    assert (
        main(["compare", str(a), str(b), "--resamples", "50", "--plot", str(out / "c.svg"), "--json", "-"])
        == 0
    )
    got = capsys.readouterr()
    json.loads(got.out)  # stdout stays the JSON document
    assert got.err == f"mmspubench compare: wrote the figure {out / 'c.svg'}\n"
    (out / "dir.png").mkdir()
    for argv in (
        ["report", str(a), "--plot", str(out / "dir.png")],
        ["compare", str(a), str(b), "--resamples", "50", "--plot", str(out / "dir.png")],
    ):
        assert main(argv) == 2
        err = _one_line(capsys)
        assert f"{out / 'dir.png'}: is a folder" in err and ".tmp" not in err, err
    os.mkfifo(out / "pipe.svg")  # a pipe (or a device such as /dev/null) is refused, never replaced
    for argv in (
        ["report", str(a), "--plot", str(out / "pipe.svg")],
        ["compare", str(a), str(b), "--resamples", "50", "--json", str(out / "pipe.svg")],
    ):
        assert main(argv) == 2
        assert "is not a regular file" in _one_line(capsys)
    assert (out / "pipe.svg").is_fifo()
    assert sorted(p.name for p in out.iterdir()) == [
        "c.svg",
        "dir.png",
        "pipe.svg",
        "r.png",
    ]  # no temporary file


def test_report_figure_shows_chance_per_type_n_and_why_cgla_is_empty(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from mmspubench.eval.analysis.plots import NO_CGLA_NOTE, report_figure_object

    a, _ = _runs(tmp_path, cgla=False)
    series = report_series(read_results(a / "results.json"), read_finished_samples(a / "samples.jsonl"), "A")
    assert dict(zip(REPORT_GROUPS, series.n, strict=True)) == EXPECTED_N
    fig = report_figure_object([series])
    top, bottom = fig.axes
    ticks = [t.get_text() for t in top.get_xticklabels()]
    assert ticks == [f"{g}\nn={EXPECTED_N[g]}" for g in REPORT_GROUPS]
    chance = [line for line in top.get_lines() if list(line.get_ydata()) == [25.0, 25.0]]
    assert len(chance) == 1 and chance[0].get_linestyle() == "--"
    assert "chance\n25%" in [t.get_text() for t in top.texts]
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["A"]  # the legend lists the runs
    assert NO_CGLA_NOTE in [t.get_text() for t in bottom.texts]
    assert not [line for line in bottom.get_lines() if list(line.get_ydata()) == [25.0, 25.0]]


def test_compare_figure_shows_per_type_n_and_why_it_has_no_cgla_panels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    a, b = _runs(tmp_path, cgla=False)
    assert main(["compare", str(a), str(b), "--resamples", "50", "--plot", str(tmp_path / "c.svg")]) == 0
    svg = (tmp_path / "c.svg").read_text()
    assert "no CGLA panels: neither run computed CGLA" in svg
    for group in ("Overall", "BG", "TN"):
        assert f"{group}\nn={EXPECTED_N[group]}" in svg or f"n={EXPECTED_N[group]}" in svg, group
