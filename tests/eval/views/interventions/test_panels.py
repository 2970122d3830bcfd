"""``report --plot``'s interventions panels and ``compare --plot``'s: the data by hand, the figure drawn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval.analysis.plot_data import REPORT_GROUPS
from mmspubench.eval.views.interventions.panels import intervention_series, panels

from tests.eval.compare.test_compare_interventions import _items_b
from tests.eval.compare_fakes import Item, write_run
from tests.eval.views.interventions.test_report import TYPES, _items


@pytest.fixture
def run(tmp_path: Path) -> Path:
    # published [1, 0, 0, 1], grayscale [1, 1, 0, 1], cf:cue-aligned [1, 1, 1, 1]; types BG, Col., Col., Sha.
    return write_run(tmp_path / "a", _items())


def test_intervention_series_by_hand(run: Path) -> None:
    results = json.loads((run / "results.json").read_text())
    s = intervention_series(results, "m")
    assert [b.name for b in s.bars] == ["grayscale", "cf:cue-aligned"]
    grey = s.bars[0]
    change = dict(zip(REPORT_GROUPS, grey.change, strict=True))
    # BG item 0 unchanged, Col. items 1, 2 [+100, 0] -> +50, Sha. item 3 unchanged; overall +25
    assert (change["BG"], change["Col."], change["Sha."], change["Overall"]) == (0.0, 50.0, 0.0, 25.0)
    assert change["TN"] is None and dict(zip(REPORT_GROUPS, grey.ci95, strict=True))["TN"] is None
    n = dict(zip(REPORT_GROUPS, grey.n, strict=True))
    assert (n["BG"], n["Col."], n["Sha."], n["TN"], n["Overall"]) == (1, 2, 1, 0, 4)
    # targeted contrast: Col. items change by [100, 0] (50), the others by [0, 0]
    assert grey.targets == ("Col.",) and grey.contrast == 50.0 and grey.contrast_ci95 is not None
    assert s.bars[1].targets == ("BG",) and s.bars[1].contrast == pytest.approx(-200 / 3)


def test_panels_follow_the_runs_and_bad_figures_are_missing(run: Path, tmp_path: Path) -> None:
    b = write_run(tmp_path / "b", _items_b(), model="model-b")
    series = [intervention_series(json.loads((p / "results.json").read_text()), p.name) for p in (run, b)]
    assert panels(series) == ["grayscale", "cf:cue-aligned", "blur"]
    plain = write_run(tmp_path / "p", [Item(f"{i}", TYPES[i], True) for i in range(4)])
    assert intervention_series(json.loads((plain / "results.json").read_text()), "p").bars == ()
    odd = {"interventions": {"by_intervention": {"blur": {"change": {"gain": "x", "by_type": {"BG": True}}}}}}
    bars = intervention_series(odd, "o").bars[0]
    assert set(bars.change) == {None} and set(bars.n) == {None} and bars.contrast is None
    # counts that cannot be: a type with more items than were asked, two totals that disagree
    accuracy: dict[str, Any] = {"n": 4, "n_by_type": {"BG": 5, "TN": 10**400, "CO": 2}}
    big = {"n": 4, "accuracy": accuracy}
    n = intervention_series({"interventions": {"by_intervention": {"blur": big}}}, "o").bars[0].n
    assert (n[0], n[1], n[2], n[-1]) == (None, None, 2, 4)
    accuracy["n"] = 10**400
    n = intervention_series({"interventions": {"by_intervention": {"blur": big}}}, "o").bars[0].n
    assert set(n) == {None}


def test_report_plot_draws_a_panel_per_intervention(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plain = write_run(tmp_path / "p", [Item(f"{i}", TYPES[i], True) for i in range(4)], model="plain")
    assert main(["report", str(run), str(plain), "--plot", str(tmp_path / "r.svg")]) == 0
    svg = (tmp_path / "r.svg").read_text()
    for title in (
        "Change under grayscale (targets Col., shaded)",
        "Change under cf:cue-aligned = the cue-aligned - cue-broken gap (each item's counterfactual targets",
        "targeted contrast +50.0 [",
    ):
        assert title in svg, title
    assert main(["report", str(plain), "--plot", str(tmp_path / "p.svg")]) == 0
    assert "Change under" not in (tmp_path / "p.svg").read_text()


def test_the_figure_object_has_one_more_axis_per_intervention(run: Path) -> None:
    pytest.importorskip("matplotlib")
    from mmspubench.eval.analysis.plot_data import report_series
    from mmspubench.eval.analysis.plots import report_figure_object, view_panels

    results = json.loads((run / "results.json").read_text())
    series = [report_series(results, None, "m")]
    assert len(report_figure_object(series).axes) == 2  # without the interventions: as before
    fig = report_figure_object(series, view_panels([results], ["m"], ["r"]))
    assert len(fig.axes) == 4
    ticks = [t.get_text() for t in fig.axes[2].get_xticklabels()]
    assert ticks[0] == "BG\nn=1" and ticks[4] == "Col.\nn=2" and ticks[-1] == "Overall\nn=4"


def test_a_counterfactual_panel_shades_no_column(run: Path) -> None:
    """A built-in's targets are fixed, so its columns are shaded; a counterfactual's are each item's
    own types, their union over the items (which covers every type of a real release), so shading
    them marked every column as targeted: its panel shades none and says why."""
    pytest.importorskip("matplotlib")
    from matplotlib.patches import Polygon, Rectangle
    from mmspubench.eval.analysis.plot_data import report_series
    from mmspubench.eval.analysis.plots import report_figure_object, view_panels

    results = json.loads((run / "results.json").read_text())
    fig = report_figure_object([report_series(results, None, "m")], view_panels([results], ["m"], ["r"]))
    grey, cf = fig.axes[2], fig.axes[3]

    def shaded(ax: Any) -> int:  # axvspan draws a Rectangle (matplotlib >= 3.9) or a Polygon
        return sum(isinstance(p, (Rectangle, Polygon)) and p.get_zorder() == 0 for p in ax.patches)

    assert shaded(grey) == 1 and "targets Col., shaded" in grey.get_title()
    assert shaded(cf) == 0 and "each item's counterfactual targets its own types" in cf.get_title()


def test_compare_plot_draws_the_shared_interventions(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    b = write_run(tmp_path / "b", _items_b(), model="model-b")
    out = tmp_path / "c.svg"
    assert main(["compare", str(run), str(b), "--plot", str(out), "--resamples", "100"]) == 0
    svg = out.read_text()
    assert "Change under grayscale (under it - published): B - A" in svg
    assert "Change under blur" not in svg and "Change under cf:cue-aligned" not in svg  # in one run only
    assert (
        main(["compare", str(run), str(run), "--b-view", "intervention:grayscale", "--plot", str(out)]) == 0
    )
    assert "intervention:grayscale (colour removed" in out.read_text()
