"""Images that are not what they claim: every item and counterfactual image of a run is decoded as
``mmspubench eval`` decodes it before the model loads; a bomb, an unreadable or a truncated file is
one line naming the record and the field, exit 2, and nothing is written. A counterfactual that its
EXIF orientation turns to another size than its item's, as shown, is refused there too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts
from mmspubench.eval.config import RunConfig
from mmspubench.eval.runner import run_eval
from PIL import Image

from tests.dataset_builder.image_fixtures import (
    header_only_png,
    jpeg_bytes,
    pixels,
    png_bytes,
    truncated,
    turned_jpeg,
)
from tests.eval.fakes import DATASET_INFO, make_rows

N = 6
BAD = 4
"""The bad item: in the third chunk of two, so a run that met it late would have written two."""
Row = dict[str, Any]


def _cf(image: Any) -> dict[str, Any]:
    return {"image": image, "name": "flat", "targets": [0], "description": "the scene in flat colours"}


def _dataset(edit: Callable[[Row], None] | None = None) -> Any:
    """``make_rows`` with a counterfactual each (items 0 and 1 of type 0, background); ``edit``
    changes item ``BAD``."""
    import datasets
    from mmspubench.dataset_builder.schema import FEATURES_WITH_COUNTERFACTUALS

    rows = make_rows(N)
    for row in rows:
        row["spurious_types"] = [0]
        row["counterfactuals"] = [_cf(Image.new("RGB", row["image"].size, (90, 90, 90)))]
    if edit is not None:
        edit(rows[BAD])
    return datasets.Dataset.from_list(rows, features=FEATURES_WITH_COUNTERFACTUALS)


def _folder(root: Path, edit: Callable[[Row], None]) -> Path:
    """A hand-made built folder (a card and one Parquet shard) of :func:`_dataset`."""
    (root / "data").mkdir(parents=True)
    (root / "README.md").write_text("# A hand-made build\n", encoding="utf-8")
    _dataset(edit).to_parquet(str(root / "data" / "test-00000-of-00001.parquet"))
    return root


CASES: dict[str, tuple[str, str, bytes, str]] = {
    "item bomb": ("image", "image", header_only_png(20_000, 10_000), "over the limit of 89478485"),
    "item over the pixel limit": ("image", "image", header_only_png(10_000, 9_000), "over the limit"),
    "item unreadable": ("image", "image", b"this is not an image", "unreadable or corrupt"),
    "item truncated": ("image", "image", truncated(jpeg_bytes(pixels((16, 16), 3))), "unreadable or corrupt"),
    "counterfactual bomb": (
        "cf",
        "counterfactuals[0].image",
        header_only_png(20_000, 10_000),
        "decompression",
    ),
    "counterfactual unreadable": ("cf", "counterfactuals[0].image", b"GIF89a nope", "unreadable or corrupt"),
    "counterfactual truncated": (
        "cf",
        "counterfactuals[0].image",
        truncated(png_bytes(pixels((16, 16), 4))),
        "unreadable or corrupt",
    ),
}


def _edit(case: str) -> Callable[[Row], None]:
    where, _, data, _ = CASES[case]

    def edit(row: Row) -> None:
        stored = {"bytes": data, "path": None}
        if where == "image":
            row["image"] = stored
        else:
            row["counterfactuals"] = [_cf(stored)]

    return edit


def _one_line(err: str, field: str, message: str) -> None:
    """One error line (beside the progress ``datasets`` prints while it reads a new Parquet file)."""
    assert "Traceback" not in err and "internal error" not in err, err
    (err,) = [line for line in err.splitlines() if line.startswith("mmspubench ")]
    assert f"record '{BAD:06d}'" in err and f"field '{field}'" in err and message in err, err
    assert "BytesIO" not in err, err


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_image_stops_eval_before_the_model_loads_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    folder = _folder(tmp_path / "built", _edit(case))
    argv = ["eval", "--dataset", str(folder), "--out", str(tmp_path / "run"), "--no-progress"]
    capsys.readouterr()
    assert main([*argv, "--metrics", "accuracy", "--batch-size", "2"]) == 2
    _, field, _, message = CASES[case]
    _one_line(capsys.readouterr().err, field, message)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_image_stops_the_export_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    folder = _folder(tmp_path / "built", _edit(case))
    out = tmp_path / "out" / "MM_SpuBench.tsv"
    out.parent.mkdir()
    capsys.readouterr()
    assert main(["export", "--format", "vlmevalkit", "--dataset", str(folder), "--out", str(out)]) == 2
    _, field, _, message = CASES[case]
    _one_line(capsys.readouterr().err, field, message)
    assert list(out.parent.iterdir()) == []


def _config(**options: Any) -> RunConfig:
    return RunConfig(
        model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), batch_size=2, **options
    ).validate()


def _no_model() -> Any:
    raise AssertionError("the model must not load")


def test_the_check_covers_the_runs_items_only(tmp_path: Path) -> None:
    """``--limit`` stops before the bad item: the run goes on (its images are never decoded)."""
    from tests.eval.fakes import FakeModel

    got = run_eval(
        FakeModel,
        _dataset(_edit("item unreadable")),
        dict(DATASET_INFO),
        _config(limit=BAD),
        tmp_path / "run",
    )
    assert got is not None and got["accuracy"]["n"] == BAD


def _turned_counterfactual(row: Row) -> None:
    """The item a plain 24x16 picture; its counterfactual stored 24x16 but shown 16x24."""
    row["image"] = pixels((24, 16), 5)
    row["counterfactuals"] = [_cf({"bytes": turned_jpeg(size=(24, 16)), "path": None})]


def test_a_counterfactual_turned_by_its_exif_orientation_is_refused_before_the_model_loads(
    tmp_path: Path,
) -> None:
    config = _config(metrics=("accuracy", "interventions"), interventions=("cf:*",))
    with pytest.raises(MMSpuBenchError) as err:
        run_eval(_no_model, _dataset(_turned_counterfactual), dict(DATASET_INFO), config, tmp_path / "run")
    assert f"record '{BAD:06d}': field 'counterfactuals[0].image'" in str(err.value), str(err.value)
    assert "16x24 RGB as shown (EXIF orientation 6); expected the item image's 24x16 RGB" in str(err.value)
    assert not (tmp_path / "run").exists()
