from __future__ import annotations

from pathlib import Path

import pytest
from mmspubench.dataset_builder.folders import replace_folder


def _fill(text: str, fail: bool = False):  # type: ignore[no-untyped-def]
    def fill(folder: Path) -> str:
        folder.mkdir()
        (folder / "f.txt").write_text(text)
        if fail:
            raise RuntimeError("write failed")
        return text

    return fill


def test_replace_folder_creates_then_replaces_and_leaves_nothing_beside(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert replace_folder(out, _fill("one")) == "one"
    assert replace_folder(out, _fill("two")) == "two"
    assert (out / "f.txt").read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_failed_fill_keeps_the_old_folder_and_leaves_nothing_beside(tmp_path: Path) -> None:
    out = tmp_path / "out"
    replace_folder(out, _fill("old"))
    with pytest.raises(RuntimeError, match="write failed"):
        replace_folder(out, _fill("new", fail=True))
    assert (out / "f.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
