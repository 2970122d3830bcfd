"""Figures as tables print them: two decimals, signed where a difference, never ``-0.00``."""

from __future__ import annotations

import pytest
from mmspubench.eval.views.confounds.cells import DASH, fixed, interval, pct
from mmspubench.space.leaderboard import figure_text, gain_text


@pytest.mark.parametrize(
    ("value", "digits", "signed", "text"),
    [
        (-0.0, 2, False, "0.00"),
        (-0.0, 4, True, "+0.0000"),
        (-0.00004, 4, True, "+0.0000"),
        (-0.00005001, 4, True, "-0.0001"),
        (-1e-12, 2, False, "0.00"),
        (0.004, 2, True, "+0.00"),
        (1.5, 1, True, "+1.5"),
        (-1.5, 1, True, "-1.5"),
        (-1.5, 2, False, "-1.50"),
    ],
)
def test_a_value_that_rounds_to_zero_has_no_minus(value: float, digits: int, signed: bool, text: str) -> None:
    assert fixed(value, digits, signed) == text


def test_an_interval_that_touches_zero_from_below_reads_plus_zero() -> None:
    assert interval((-1e-9, 0.0333333), 4) == "[+0.0000, +0.0333]"
    assert interval((-3.14159, -0.001)) == "[-3.14, +0.00]"


def test_compare_prints_no_negative_zero_in_an_interval() -> None:
    """The CGLA_min row of ``compare`` (four decimals): an interval whose lower end is a rounding
    error below zero read ``[-0.0000, ...]`` before."""
    from mmspubench.eval.analysis.compare.cli import _mean_cells
    from mmspubench.eval.analysis.compare.paired import PairedMean

    cells = _mean_cells(PairedMean(30, 0.1, 0.1, -0.0, (-2e-9, 0.0123)), 4)
    assert cells == ["0.1000", "0.1000", "+0.0000 [+0.0000, +0.0123]"]


def test_report_and_space_cells_share_the_rule() -> None:
    assert pct(-0.0) == "0.00"
    assert pct(True) == DASH
    assert gain_text(-0.001) == "+0.00"
    assert figure_text(-0.0) == "0.00"
    assert gain_text(-2.5) == "-2.50"
