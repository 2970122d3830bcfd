"""Bad input to ``curate select``: one clear line on stderr, exit 2, nothing half-written."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from mmspubench.cli import main

from .fixtures import make_class_tree, one_error_line, select_argv


def _run(data: Path | str, clip: Path, out: Path, *extra: str) -> int:
    return main(select_argv(data, clip, out, "--k", "1", "--l", "3", *extra))


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    return one_error_line(capsys.readouterr().err)


def _nothing_written(parent: Path, keep: set[str]) -> None:
    assert {p.name for p in parent.iterdir()} == keep


def test_a_class_folder_without_images(
    tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_class_tree(tmp_path / "imgs", 1, ("apple", "bicycle"))
    (root / "candle").mkdir()
    assert _run(root, tiny_clip, tmp_path / "cand") == 2
    assert "class folder 'candle' has no images" in _one_line(capsys)
    _nothing_written(tmp_path, {"imgs"})


def test_an_image_file_that_is_not_an_image(
    tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_class_tree(tmp_path / "imgs", 12, ("apple", "bicycle", "candle", "dolphin"))
    (root / "candle" / "0007.png").write_bytes(b"not a png")
    assert _run(root, tiny_clip, tmp_path / "cand", "--batch-size", "4") == 2
    err = _one_line(capsys)
    assert "candle/0007.png: not a readable image" in err
    _nothing_written(tmp_path, {"imgs"})  # the batches before it were staged, then removed


def test_a_file_that_is_not_an_image_file(
    tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_class_tree(tmp_path / "imgs", 1, ("apple", "bicycle"))
    (root / "apple" / "notes.txt").write_text("x")
    assert _run(root, tiny_clip, tmp_path / "cand") == 2
    assert "notes.txt: not a .jpg/.jpeg/.png file" in _one_line(capsys)
    _nothing_written(tmp_path, {"imgs"})


@pytest.mark.parametrize(("k", "upper"), [("3", "3"), ("5", "2")])
def test_k_not_below_l(
    k: str, upper: str, tiny_clip: Path, image_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(image_tree, tiny_clip, tmp_path / "cand", "--k", k, "--l", upper) == 2
    assert f"--k {k} --l {upper}: expected k < l" in _one_line(capsys)
    _nothing_written(tmp_path, set())


def test_an_unknown_label(
    tiny_clip: Path, image_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = sorted(str(p) for p in image_tree.glob("*/*.png"))[:4]
    data = datasets.Dataset.from_dict(
        {"image": paths, "label": [0, 1, -1, 0]},
        features=datasets.Features(
            {"image": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b"])}
        ),
    )
    data.save_to_disk(str(tmp_path / "ds"))
    assert _run(tmp_path / "ds", tiny_clip, tmp_path / "cand") == 2
    err = _one_line(capsys)
    assert "row 2: column 'label': unknown label -1" in err
    _nothing_written(tmp_path, {"ds"})


def test_an_unknown_source_name(
    tiny_clip: Path, image_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(select_argv(image_tree, Path("no-clip-needed"), tmp_path / "c", source="Flickr")) == 2
    assert "--source-name 'Flickr': unknown; expected one of ObjectNet" in _one_line(capsys)


def test_a_clip_that_is_not_there(
    image_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(image_tree, tmp_path / "no-clip", tmp_path / "cand") == 2
    assert "no such folder" in _one_line(capsys)
    _nothing_written(tmp_path, set())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("org/not-cached", "not an image-class folder tree and not a loadable dataset split"),
        ("./no/such/folder", "no such folder"),
    ],
)
def test_a_dataset_that_cannot_be_found(
    data: str, message: str, tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(data, tiny_clip, tmp_path / "cand") == 2  # HF_HUB_OFFLINE=1 in every test
    assert message in _one_line(capsys)
    _nothing_written(tmp_path, set())


def test_a_template_without_a_slot(
    tiny_clip: Path, image_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(image_tree, tiny_clip, tmp_path / "cand", "--prompt-template", "a photo") == 2
    assert "expected exactly one '{}'" in _one_line(capsys)


def test_out_inside_the_image_folder_is_refused(
    tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_class_tree(tmp_path / "imgs", 1, ("apple", "bicycle"))
    assert _run(root, tiny_clip, root / "cand") == 2
    assert "--out lies inside --data" in _one_line(capsys)
    _nothing_written(root, {"apple", "bicycle"})
