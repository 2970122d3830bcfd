"""``report --plot``'s confound panels: letter shares, gain per type, reliability diagram (by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.eval.analysis.plot_data import REPORT_GROUPS
from mmspubench.eval.views.confounds.panels import confound_series, panels

from tests.eval.compare.test_compare_confounds import RUN_A, _items
from tests.eval.compare_fakes import write_run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "a", _items(RUN_A))


def test_confound_series_by_hand(run: Path) -> None:
    s = confound_series(json.loads((run / "results.json").read_text()), "m")
    # the 16 rotation answers: item 0 A B C D, item 1 A B B D, item 2 B B C D, item 3 A B C D
    assert s.letter_share == (3 / 16, 6 / 16, 3 / 16, 4 / 16, 0.0)
    # gain = accuracy - blind per type: BG (items 0, 2) 50 - 0, Sha. (items 1, 2) 50 - 50,
    # Col. (item 3) 100 - 100; overall 75 - 50; no item of the other types
    gain = dict(zip(REPORT_GROUPS, s.gain or (), strict=True))
    assert (gain["BG"], gain["Sha."], gain["Col."], gain["Overall"]) == (50.0, 0.0, 0.0, 25.0)
    assert gain["TN"] is None and s.gain_ci95 is not None
    # confidence bins: 0.5 (item 1, right) and 1.0 (items 0, 2, 3: 2 right)
    assert s.reliability == ((0.5, 1.0, 1), (1.0, pytest.approx(2 / 3), 3)) and s.ece == 0.375
    assert panels([s]) == ["letter_share", "gain", "reliability"]


def test_a_run_without_views_has_no_confound_panel(tmp_path: Path) -> None:
    plain = write_run(tmp_path / "p", _items(RUN_A, views=False))
    s = confound_series(json.loads((plain / "results.json").read_text()), "m")
    assert s.empty and panels([s]) == []
    broken = {"circular": {"letter_share": "x"}, "blind": {"gain": "high"}, "calibration": {"bins": [1]}}
    t = confound_series(broken, "m")
    assert t.letter_share is None and t.reliability is None and t.gain is not None
    assert t.gain[-1] is None  # a malformed figure shows as missing, never as a number


def test_report_plot_draws_the_panels(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plain = write_run(tmp_path / "p", _items(RUN_A, views=False), model="plain-$x$")
    assert main(["report", str(run), str(plain), "--plot", str(tmp_path / "r.svg")]) == 0
    svg = (tmp_path / "r.svg").read_text()
    for title in (
        "Letter shares over the four rotations",
        "Gain of the image per type",
        "Reliability diagram",
    ):
        assert title in svg, title
    assert "plain-$x$" in svg  # a model id drawn as typed (plain text), not as mathtext
    assert main(["report", str(plain), "--plot", str(tmp_path / "p.svg")]) == 0
    assert "Reliability" not in (tmp_path / "p.svg").read_text()


def test_the_figure_object_without_views_keeps_two_panels(run: Path) -> None:
    pytest.importorskip("matplotlib")
    from mmspubench.eval.analysis.plot_data import report_series
    from mmspubench.eval.analysis.plots import report_figure_object, view_panels

    results = json.loads((run / "results.json").read_text())
    series = [report_series(results, None, "m")]
    assert len(report_figure_object(series).axes) == 2
    assert len(report_figure_object(series, view_panels([results], ["m"], ["r"])).axes) == 5


def _edit_calibration(run: Path, n: int | None, count: int) -> None:
    path = run / "results.json"
    results = json.loads(path.read_text())
    if n is not None:
        results["calibration"]["n"] = n
    results["calibration"]["bins"][-1]["n"] = count  # the bin of confidence 1.0 (3 of the 4 items)
    path.write_text(json.dumps(results))


@pytest.mark.parametrize("count", [5, 10**30, 10**400], ids=["n+1", "1e30", "1e400"])
def test_a_bin_counting_more_items_than_the_run_is_one_line(
    count: int, run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    _edit_calibration(run, None, count)
    out = tmp_path / "r.png"
    assert main(["report", str(run), "--plot", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    assert (
        "results.json: field 'calibration.bins[14].n'" in captured.err and "expected 0 to 4" in captured.err
    )
    assert not out.exists() and captured.out == ""  # no table, no figure


def test_huge_but_consistent_bin_counts_draw(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _edit_calibration(run, 10**400, 10**400)  # marker areas are shares of the largest bin
    assert main(["report", str(run), "--plot", str(tmp_path / "r.png")]) == 0
    assert (tmp_path / "r.png").stat().st_size > 0


def test_every_type_of_the_gain_panel_has_its_interval_and_n(run: Path) -> None:
    """Per type, the paired bootstrap interval of (with - without the image) over that type's items,
    from the samples, with the run's seed; its items under the tick. Before, only Overall had them."""
    from mmspubench.eval.analysis.plot_data import count_ticks
    from mmspubench.eval.results import read_finished_samples
    from mmspubench.eval.views.confounds.paired import paired_bootstrap_ci

    results = json.loads((run / "results.json").read_text())
    samples = read_finished_samples(run / "samples.jsonl")
    s = confound_series(results, "m", "r", samples)
    ci = dict(zip(REPORT_GROUPS, s.gain_ci95 or (), strict=True))
    n = dict(zip(REPORT_GROUPS, s.gain_n or (), strict=True))
    seed = results["config"]["seed"]
    # BG: item 0 right with the image only, item 2 wrong both ways: per-item gains 100 and 0, so the
    # resampled means span [0, 100]; Sha. (items 1 and 2) and Col. (item 3): no item changes, [0, 0]
    assert ci["BG"] == paired_bootstrap_ci([0.0, 0.0], [100.0, 0.0], seed) == (0.0, 100.0)
    assert ci["Sha."] == ci["Col."] == (0.0, 0.0)
    assert ci["Overall"] == tuple(results["blind"]["gain_ci95"]) and ci["TN"] is None
    assert (n["BG"], n["Sha."], n["Col."], n["TN"], n["Overall"]) == (2, 2, 1, 0, 4)
    # without the samples (a results.json alone), the types have no interval, Overall keeps its own
    bare = dict(zip(REPORT_GROUPS, confound_series(results, "m").gain_ci95 or (), strict=True))
    assert bare["BG"] is None and bare["Overall"] == ci["Overall"]
    assert count_ticks([s.gain_n or ()])[0] == "BG\nn=2"


def test_the_gain_panel_draws_every_interval_and_count(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert main(["report", str(run), "--plot", str(tmp_path / "r.svg")]) == 0
    from mmspubench.eval.analysis.plot_data import report_series
    from mmspubench.eval.analysis.plots import report_figure_object, view_panels
    from mmspubench.eval.results import read_finished_samples

    results = json.loads((run / "results.json").read_text())
    samples = read_finished_samples(run / "samples.jsonl")
    fig = report_figure_object(
        [report_series(results, samples, "m")], view_panels([results], ["m"], ["r"], [samples])
    )
    gain = next(ax for ax in fig.axes if ax.get_title().startswith("Gain of the image"))
    ticks = [t.get_text() for t in gain.get_xticklabels()]
    assert ticks[0] == "BG\nn=2" and ticks[-1] == "Overall\nn=4"
    # one error bar per type with items (BG, Col., Sha.) and Overall
    assert len(gain.containers) - 1 == 4  # the bars' own container, then the error bars
