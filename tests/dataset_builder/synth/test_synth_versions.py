"""The synthetic twin is the same bytes under the lowest and highest Pillow and numpy pyproject allows.

Each version is installed on its own (``pip install --no-deps --target``) and put first on
``PYTHONPATH`` of a child process, which writes the default release and a small train release,
builds the default release and hashes both folders. Annotation bytes and decoded pixels
(``release_digest``) and the content hashes must equal those of this environment, and the pixels
the fixed digests of ``test_synth_confounds``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.dataset_builder.synth.test_synth_confounds import (
    DEFAULT_RELEASE_DIGEST,
    TRAIN_RELEASE_DIGEST,
    release_digest,
)

ROOT = Path(__file__).resolve().parents[3]
CHILD = """
import json, sys, contextlib, io
from pathlib import Path
import PIL, numpy
from mmspubench.cli import main
from mmspubench.dataset_builder.builder import build_repo
from mmspubench.dataset_builder.load import content_hash
out = Path(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["synth", "--out", str(out / "bench")]) == 0
    argv = ["synth", "--out", str(out / "train"), "--mode", "train", "--n", "40", "--image-size", "32"]
    assert main(argv) == 0
build_repo(out / "bench", out / "repo")
hashes = {name: content_hash(out / name) for name in ("bench", "train", "repo")}
print(json.dumps({"pillow": PIL.__version__, "numpy": numpy.__version__, "hashes": hashes}))
"""


def allowed(name: str) -> tuple[str, str]:
    """The ``>=`` bound of ``name`` in pyproject's dependencies, and the whole specifier."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(rf'^\s*"{name}(>=([0-9.]+),<[0-9.]+)"', text, re.MULTILINE)
    assert match, f"pyproject.toml: no {name}>=X,<Y dependency"
    return match.group(2), match.group(1)


def install(spec: str, target: Path) -> Path:
    """``pip install --no-deps --target TARGET SPEC`` (binary wheels only); skips when none fits here."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary", ":all:"]
    done = subprocess.run([*command, "--target", str(target), spec], capture_output=True, text=True)
    if done.returncode != 0 and "No matching distribution" in done.stderr:
        pytest.skip(f"{spec}: no wheel for this Python and platform")
    assert done.returncode == 0, done.stderr
    return target


def generate(out: Path, path: Path | None) -> dict[str, Any]:
    """The child's versions and hashes, plus the release digests of what it wrote."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", MMSPUBENCH_CACHE=str(out / "cache"))
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    found["digests"] = {name: release_digest(out / name) for name in ("bench", "train")}
    return found


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return generate(tmp_path_factory.mktemp("here"), None)


VARIANTS = [("pillow", "lowest"), ("pillow", "highest"), ("numpy", "lowest"), ("numpy", "highest")]


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("package, end", VARIANTS, ids=[f"{p}-{e}" for p, e in VARIANTS])
def test_the_twin_is_the_same_under_the_allowed_versions(
    package: str, end: str, here: dict[str, Any], tmp_path: Path
) -> None:
    lowest, specifier = allowed(package)
    spec = f"{package}=={lowest}" if end == "lowest" else f"{package}{specifier}"
    there = generate(tmp_path / "out", install(spec, tmp_path / "site"))
    version = there[package]
    if end == "lowest":  # the installed copy was the one imported, not the environment's
        assert version == lowest or version.startswith(lowest + "."), version
    assert there["digests"] == {"bench": DEFAULT_RELEASE_DIGEST, "train": TRAIN_RELEASE_DIGEST}
    assert there["digests"] == here["digests"]
    assert there["hashes"] == here["hashes"], (there["pillow"], there["numpy"], here["pillow"], here["numpy"])
