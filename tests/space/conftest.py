"""A running Space on 127.0.0.1 for the slow browser and load tests (bundled dataset and model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.space.leaderboard import TYPE_COLUMNS

from .fixtures import results_json, write_run
from .local_app import launch_local


@pytest.fixture(scope="module")
def space_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from mmspubench.space.handlers import SpaceConfig
    from mmspubench.space.layout import build_app

    runs = tmp_path_factory.mktemp("runs")
    write_run(
        runs,
        "a",
        results_json("org/model-a", {t: 50.0 + i for i, t in enumerate(TYPE_COLUMNS)}, 52.0, 40.0, 90),
    )
    write_run(
        runs,
        "b",
        results_json("org/model-b", {t: 30.0 + 2 * i for i, t in enumerate(TYPE_COLUMNS)}, 35.0, 70.0, 90),
    )
    with pytest.MonkeyPatch.context() as env:
        # Module fixtures run before the function-scoped HF_HOME fixture: isolate here as well.
        env.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "hf_home"))
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("HF_DATASETS_OFFLINE", "1")
        env.setenv("TRANSFORMERS_OFFLINE", "1")
        from mmspubench.space.handlers import _dataset_item, load_state
        from mmspubench.space.live import BUNDLED_CHOICE

        state = load_state(SpaceConfig(results=str(runs), hub_models=()))
        # Build and load the bundled model before the first page: the tests time the app, not the build.
        state.models.run(BUNDLED_CHOICE, _dataset_item(state, str(state.index.frame["id"][0])))
        demo = build_app(state=state)
        url = launch_local(demo)
        try:
            yield url
        finally:
            demo.close()


@pytest.fixture
def artifacts_dir(tmp_path: Path) -> Path:
    """Where screenshots go: ``$MMSPUBENCH_TEST_ARTIFACTS`` when set (CI keeps it), else a temp folder."""
    import os

    folder = Path(os.environ.get("MMSPUBENCH_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
