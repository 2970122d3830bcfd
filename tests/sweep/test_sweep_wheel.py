"""The wheel an HF Job installs (and ``space build`` vendors) ships only the package's declared files:
never a file planted in a data folder, a symbolic link out of the checkout, or a token."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.sweep import wheel
from mmspubench.sweep.wheel import checkout
from mmspubench.wheel import build_wheel

from tests.space.test_vendor_secrets import IGNORED

TOKEN = "hf_plantedTokenValue0123456789abcdefAB"
ASSETS = Path("eval/assets")
BIASED_MODEL = ASSETS / "tiny-llava-biased"


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the checkout, which the launcher builds from (``wheel.checkout``): files are planted
    there, never in the real checkout, which other tests read at the same time (pytest -n)."""
    copy = tmp_path / "src"
    shutil.copytree(checkout(), copy, ignore=IGNORED, symlinks=True)
    monkeypatch.setattr(wheel, "checkout", lambda: copy)
    wheel.build.cache_clear()
    yield copy
    wheel.build.cache_clear()


def _new(path: Path) -> Path:
    assert not path.exists() and not path.is_symlink(), f"{path} exists already"
    return path


def test_a_token_file_left_in_a_model_folder_is_not_shipped(source: Path, tmp_path: Path) -> None:
    _new(source / BIASED_MODEL / "hf_token").write_text(TOKEN + "\n", encoding="utf-8")
    _new(source / BIASED_MODEL / "notes.txt").write_text("a stray file\n", encoding="utf-8")
    built, _ = build_wheel(source, tmp_path / "w")
    with zipfile.ZipFile(built) as archive:
        names = archive.namelist()
        assert "mmspubench/eval/assets/tiny-llava-biased/model.safetensors" in names
        assert not [n for n in names if n.endswith(("/hf_token", "/notes.txt"))]
        assert not any(TOKEN.encode() in archive.read(n) for n in names)


def test_a_token_in_a_file_the_package_declares_refuses_the_build(source: Path, tmp_path: Path) -> None:
    folder = _new(source / ASSETS / "tiny-llava-planted")
    folder.mkdir()
    (folder / "config.json").write_text(f'{{"token": "{TOKEN}"}}\n', encoding="utf-8")
    with pytest.raises(MMSpuBenchError) as info:
        build_wheel(source, tmp_path / "w")
    message = str(info.value)
    assert (
        "the wheel would ship mmspubench/eval/assets/tiny-llava-planted/config.json, which holds a token"
        in message
    )
    assert TOKEN not in message


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_symbolic_link_out_of_the_checkout_refuses_the_build(
    source: Path, tmp_path: Path, what: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text('{"private": "not the package\'s"}\n', encoding="utf-8")
    if what == "folder":
        link = _new(source / ASSETS / "tiny-llava-linked")
        link.symlink_to(outside, target_is_directory=True)
        shown, target = link, outside  # the link is named, the folder it leads to
    else:
        folder = _new(source / ASSETS / "tiny-llava-linked")
        folder.mkdir()
        shown, target = folder / "config.json", outside / "config.json"
        shown.symlink_to(target)
    with pytest.raises(MMSpuBenchError) as info:
        build_wheel(source, tmp_path / "w")
    assert f"{shown}: a symbolic link to {target.resolve()}, outside the checkout" in str(info.value)
    # the HF Jobs launcher builds through the same function: its wheel is refused too
    with pytest.raises(MMSpuBenchError, match="outside the checkout"):
        wheel.build(tmp_path / "jobs-wheel")
    assert not list((tmp_path / "jobs-wheel").glob("*.whl"))
