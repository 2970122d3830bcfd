"""Item 7: the Run tab shows the item it will run on; Explore's CGLA chart fills from a results run on opening."""

from __future__ import annotations

from typing import Any

from mmspubench.space import preview
from mmspubench.space.handlers import LIVE_SOURCE, SpaceState
from mmspubench.space.layout import build_app

from .test_handlers import state  # noqa: F401  (fixture)


def _component(demo: Any, elem_id: str) -> Any:
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def test_run_tab_previews_the_item(state: SpaceState) -> None:  # noqa: F811
    image, text = preview.run_preview(state, "000000")
    question = state.dataset[0]["question"]
    assert image is not None and "000000" in text and "Question:" in text and "A. " in text
    assert preview.run_preview(state, "nope") == (None, preview.run_preview(state, "")[1])
    demo = build_app(state=state)
    assert _component(demo, "run-item-image").value is not None
    shown = str(_component(demo, "run-item-text").value)
    assert "Will run on item" in shown and question.split()[0] in shown
    assert "run_preview" in [fn.api_name for fn in demo.fns.values()]


def test_explore_cgla_comes_from_a_results_run_on_opening(state: SpaceState) -> None:  # noqa: F811
    frame, text, record = preview.results_cgla(state, "000000", LIVE_SOURCE)
    assert len(frame) == 5 and "org-a" in text and "CGLA_min" in text and record is not None
    frame, text, record = preview.results_cgla(state, "000001", "org-a")
    assert frame.empty and text == preview.NO_RUN_NOTE and record is None
    demo = build_app(state=state)
    assert "CGLA_min" in _component(demo, "explore-cgla-text").value
    assert (
        _component(demo, "explore-cgl-plot").value["type"] == "matplotlib"
    )  # charts.cgl_figure (test_charts.py)
    names = [fn.api_name for fn in demo.fns.values()]
    assert {"results_cgla", "results_cgla_selected", "results_cgla_by_id"} <= set(names)
