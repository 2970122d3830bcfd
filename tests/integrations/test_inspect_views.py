"""The Inspect task's confound views (`-T circular=true`, `-T blind=true`) and their ingest:
hand-computed figures of an always-"A" model, the samples as shown, the option checks, edited logs,
and the bundled model through our provider against `mmspubench eval`, item by item."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder import hub_fixtures as hub
from tests.helpers.costs import without_costs

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log

TASK = "mmspubench/mm_spubench"
ARGS = {"dataset": hub.REPO_ID, "revision": hub.COMMIT}
VIEWS = {**ARGS, "circular": True, "blind": True}


def _run(model: str, args: dict[str, Any], log_dir: Path, **kwargs: Any) -> EvalLog:
    logs = inspect_eval(TASK, model=model, task_args=args, display="none", log_dir=str(log_dir), **kwargs)
    assert logs[0].status == "success", logs[0].error
    return logs[0]


@pytest.fixture(scope="module")
def always_a(published: Path, tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """The offline mock answering "A" to every sample, circular and blind."""
    return _run("mmspubench-mock/A", VIEWS, tmp_path_factory.mktemp("logs"))


def _figures(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {k: m.value for score in log.results.scores for k, m in score.metrics.items()}


def _ingest(path: Path | str, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["ingest", "inspect", str(path), "--out", str(out)])
    return code, capsys.readouterr().err.strip()


def _golds() -> list[str]:
    from mmspubench.integrations.items import load_split

    return [s.item.answer for s in load_split(hub.REPO_ID, hub.COMMIT).items]


def test_an_always_a_model_gives_the_hand_computed_figures_in_inspect_and_after_ingest(
    always_a: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golds = _golds()
    assert always_a.samples is not None and len(always_a.samples) == 5 * hub.N_IMAGES
    share_a = 100 * golds.count("A") / len(golds)
    got = _figures(always_a)
    # "A" is the gold letter in exactly one rotation of every item: never right in all four.
    assert got["circular_accuracy"] == 0.0 and got["consistency"] == 0.0
    assert got["rotation_accuracy"] == pytest.approx(25.0, abs=1e-12)
    assert got["vanilla_accuracy"] == pytest.approx(share_a) == got["overall"]
    # The blind view shows the published order: "A" is right exactly where it is with the image.
    assert got["blind_accuracy"] == pytest.approx(share_a) and got["blind_gain"] == 0.0
    assert got["position_bias_p"] < 1e-6
    capsys.readouterr()
    assert main(["ingest", "inspect", str(always_a.location), "--out", str(tmp_path / "run")]) == 0
    assert f"accuracy {share_a:.2f}%, circular 0.00%, blind {share_a:.2f}%" in capsys.readouterr().out
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["metrics"] == ["accuracy", "circular", "blind"]
    circular, blind = results["circular"], results["blind"]
    assert circular["accuracy"] == 0.0 and circular["rotation_accuracy"] == pytest.approx(25.0)
    assert circular["letter_share"] == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0, "unparsed": 0.0}
    assert blind["accuracy"] == pytest.approx(share_a) and blind["gain"] == 0.0
    assert blind["only_with_image"] == blind["only_blind"] == 0 and blind["image"] == "none"
    lines = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    for line, gold in zip(lines, golds, strict=True):
        assert [r["prediction"] for r in line["rotations"]] == ["A"] * 4
        assert [r["correct"] for r in line["rotations"]] == [
            "ABCD"[("ABCD".index(gold) + k) % 4] == "A" for k in range(4)
        ]
        assert line["blind"]["prediction"] == "A" and line["blind"]["correct"] == (gold == "A")


def test_each_item_becomes_its_four_rotations_and_its_blind_view_in_order() -> None:
    from inspect_ai.model import ContentImage, ContentText
    from mmspubench.integrations.inspect.task import mm_spubench
    from mmspubench.integrations.items import load_split

    item = load_split(None, limit=1).items[0].item
    task = mm_spubench(limit=1, circular=True, blind=True)
    samples = list(task.dataset)
    assert [s.id for s in samples] == [
        item.id,
        f"{item.id}/rotation-1",
        f"{item.id}/rotation-2",
        f"{item.id}/rotation-3",
        f"{item.id}/blind",
    ]
    for k, sample in enumerate(samples[:4]):
        assert sample.choices is not None
        for j, option in enumerate(item.options):  # published position j is shown at (j + k) mod 4
            assert sample.choices[(j + k) % 4] == option
        assert sample.target == "ABCD"[("ABCD".index(item.answer) + k) % 4]
        user = sample.input[1]
        assert [type(p) for p in user.content] == [ContentImage, ContentText]  # type: ignore[union-attr]
    blind = samples[4]
    assert blind.choices == list(item.options) and blind.target == item.answer
    assert [type(p) for p in blind.input[1].content] == [ContentText]  # type: ignore[union-attr]


def test_a_grey_blind_view_shows_a_mid_grey_image_of_the_items_size() -> None:
    from inspect_ai.model import ContentImage
    from mmspubench.integrations.inspect.task import mm_spubench
    from mmspubench.integrations.items import load_split
    from PIL import Image

    item = load_split(None, limit=1).items[0].item
    task = mm_spubench(limit=1, blind=True, blind_image="grey")
    content = task.dataset[1].input[1].content  # type: ignore[union-attr]
    (image,) = [p for p in content if isinstance(p, ContentImage)]
    grey = Image.open(io.BytesIO(base64.b64decode(str(image.image).partition(",")[2]))).convert("RGB")
    assert grey.size == item.pil_image.size
    import numpy as np

    assert (np.asarray(grey) == 128).all()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"circular": "yes"}, "-T circular='yes': expected true or false"),
        ({"blind": 1}, "-T blind=1: expected true or false"),
        ({"blind_image": "grey"}, "-T blind_image='grey': is used only with -T blind=true"),
        ({"blind": True, "blind_image": "pink"}, "-T blind_image='pink': expected one of none, grey"),
    ],
)
def test_the_view_options_are_checked_in_one_line_before_the_data_is_read(
    given: dict[str, Any], expected: str
) -> None:
    from mmspubench.integrations.inspect.task import mm_spubench

    with pytest.raises(MMSpuBenchError) as caught:
        mm_spubench(dataset="/nonexistent/folder", **given)
    assert str(caught.value).startswith(expected) and "\n" not in str(caught.value)


def _edited(log: EvalLog, path: Path, edit: Any) -> Path:
    copy = read_eval_log(log.location)
    assert copy.samples is not None
    edit(copy)
    write_eval_log(copy, str(path))
    return path


def _flip_rotation(log: EvalLog) -> None:
    assert log.samples is not None
    sample = next(s for s in log.samples if str(s.id).endswith("/rotation-2"))
    score = (sample.scores or {})["choice"]
    score.value = "I" if score.value == "C" else "C"


def _drop_blind(log: EvalLog) -> None:
    assert log.samples is not None
    log.samples = [s for s in log.samples if s.id != f"{log.samples[0].metadata['item_id']}/blind"]


def _move_rotation(log: EvalLog) -> None:
    assert log.samples is not None
    sample = next(s for s in log.samples if str(s.id).endswith("/rotation-1"))
    sample.metadata["rotation"] = 3


def _grey_claimed(log: EvalLog) -> None:  # the log says grey, its blind prompts hold no image
    log.eval.task_args["blind_image"] = "grey"


def _no_blind_arg(log: EvalLog) -> None:  # blind samples in a run that did not ask for them
    log.eval.task_args["blind"] = False


def _edit_circular_figure(log: EvalLog) -> None:
    assert log.results is not None
    for score in log.results.scores:
        if "circular_accuracy" in score.metrics:
            score.metrics["circular_accuracy"].value = 50.0


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_flip_rotation, "field 'score'"),
        (_drop_blind, "lack an answer of a view"),
        (_move_rotation, "field 'id'"),
        (_edit_circular_figure, "figure 'circular_accuracy': recorded 50.0"),
        (_grey_claimed, "0 image(s) in the blind view, expected 1"),
        (_no_blind_arg, "is not a view of this run"),
    ],
)
def test_an_edited_view_log_is_refused(
    always_a: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, expected: str
) -> None:
    code, err = _ingest(_edited(always_a, tmp_path / "log.eval", edit), tmp_path / "run", capsys)
    assert code == 2 and expected in err and "\n" not in err, err
    assert not (tmp_path / "run").exists()


def test_inspects_own_limit_must_cut_between_items(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {**ARGS, "circular": True}
    cut = _run("mmspubench-mock/B", args, tmp_path / "a", limit=6)
    code, err = _ingest(cut.location, tmp_path / "run", capsys)
    assert code == 2 and "a multiple of the 4 samples of an item" in err and not (tmp_path / "run").exists()
    whole = _run("mmspubench-mock/B", args, tmp_path / "b", limit=8)
    code, err = _ingest(whole.location, tmp_path / "run", capsys)
    assert code == 0, err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dataset"]["n"] == 2 and results["circular"]["n"] == 2


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("blind_image", ["none", "grey"])
def test_the_bundled_model_gives_evals_circular_and_blind_figures_item_by_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], blind_image: str
) -> None:
    limit = 6
    run = tmp_path / "eval"
    argv = ["eval", "--out", str(run), "--no-progress", "--limit", str(limit), "--answer-mode", "generate"]
    argv += ["--metrics", "accuracy,circular,blind", "--blind-image", blind_image]
    assert main(argv) == 0
    args = {"limit": limit, "circular": True, "blind": True, "blind_image": blind_image}
    log = _run("mmspubench/bundled", args, tmp_path / "logs")
    code, err = _ingest(log.location, tmp_path / "ingested", capsys)
    assert code == 0, err
    ours = json.loads((run / "results.json").read_text())
    back = json.loads((tmp_path / "ingested" / "results.json").read_text())
    for section in ("accuracy", "circular", "blind"):
        assert back[section] == ours[section], section
    figures = _figures(log)
    assert figures["circular_accuracy"] == ours["circular"]["accuracy"]
    assert figures["blind_gain"] == ours["blind"]["gain"]
    assert back["config"]["metrics"] == ours["config"]["metrics"]
    assert back["config"].get("blind_image") == ours["config"].get("blind_image")
    keys = ("id", "prediction", "correct", "raw_output", "rotations", "blind")
    assert [{k: s[k] for k in keys} for s in _lines(tmp_path / "ingested")] == [
        {k: without_costs(s[k]) for k in keys}
        for s in _lines(run)  # ingested: no token counts
    ]
