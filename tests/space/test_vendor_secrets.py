"""The wheel that ``space build`` vendors and the sweep's HF Jobs launcher sends ships only the
package's declared files: no token file, no token-shaped text, no symbolic link out of the checkout.

Each case plants files in a temporary copy of the source tree (a few seconds per wheel build).
"""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path("eval/assets/tiny-llava-biased")
IGNORED = shutil.ignore_patterns(
    ".git", ".venv*", "__pycache__", "*.egg-info", "build", "dist", ".*_cache", "runs"
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the checkout (sources, package data, pyproject.toml)."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT, copy, ignore=IGNORED, symlinks=True)
    return copy


def _shipped(tree: Path, work: Path) -> set[str]:
    wheel, _ = build_wheel(tree, work)
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _refusal(tree: Path, work: Path) -> str:
    with pytest.raises(MMSpuBenchError) as info:
        build_wheel(tree, work)
    return str(info.value)


def test_a_model_folder_ships_its_model_files_and_nothing_planted_beside_them(
    tree: Path, tmp_path: Path
) -> None:
    model_files = sorted(p.name for p in (tree / MODEL).iterdir())
    for name in ("hf_token", ".env", "notes.txt", "token"):
        (tree / MODEL / name).write_text("hf_" + "a" * 34 + "\n")
    shipped = _shipped(tree, tmp_path / "work")
    in_wheel = sorted(
        n.rsplit("/", 1)[-1] for n in shipped if n.startswith(f"mmspubench/{MODEL.as_posix()}/")
    )
    assert in_wheel == model_files  # every file of the model, none of the planted ones


def test_a_token_file_the_package_data_would_match_is_refused_by_name(tree: Path, tmp_path: Path) -> None:
    pyproject = tree / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    loose = re.sub(
        r'"mmspubench\.eval\.assets" = \[.*?\]',
        '"mmspubench.eval.assets" = ["tiny-llava-*/*"]',
        text,
        flags=re.S,
    )
    assert loose != text
    pyproject.write_text(loose, encoding="utf-8")
    (tree / MODEL / "hf_token").write_text("not shaped like a token\n")
    message = _refusal(tree, tmp_path / "work")
    assert "mmspubench/eval/assets/tiny-llava-biased/hf_token, a file named like a token file" in message


@pytest.mark.parametrize(
    ("rel", "secret"),
    [
        (MODEL / "README.md", "\nHF_TOKEN=hf_" + "Ab1" * 12 + "\n"),
        (Path("eval/leftover.py"), "\nKEY = 'sk-" + "x9" * 18 + "'\n"),
    ],
)
def test_a_token_shaped_text_in_a_shipped_file_is_refused_naming_it(
    tree: Path, tmp_path: Path, rel: Path, secret: str
) -> None:
    path = tree / rel
    with path.open("a", encoding="utf-8") as handle:
        handle.write(secret)
    message = _refusal(tree, tmp_path / "work")
    assert f"the wheel would ship mmspubench/{rel.as_posix()}, which holds a token-shaped text" in message
    assert secret.strip() not in message


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_symbolic_link_out_of_the_checkout_is_refused_naming_it(
    tree: Path, tmp_path: Path, linked: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text("{}\n")
    if linked == "file":
        link = tree / MODEL / "config.json"
        link.unlink()
        link.symlink_to(outside / "config.json")
    else:
        link = tree / "eval" / "assets" / "tiny-llava-linked"
        link.symlink_to(outside, target_is_directory=True)
    message = _refusal(tree, tmp_path / "work")
    assert message.startswith(f"{link}: a symbolic link to {outside.resolve()}")
