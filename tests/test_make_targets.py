"""After `make run` the user is told how to reach the environment's commands; `make report` runs one;
`make help` lists every target; the install steps take the lock's versions, resolve nothing and are
quiet."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_lock import PROJECT
from tests.test_readme import _EDITABLE, ROOT, _commands, _env_without_make_vars

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A copy of the Makefile with an installed-looking .venv whose `mmspubench` echoes its arguments."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("bin/python", ".stamp-torch", ".stamp-eval"):
        (tmp_path / ".venv" / name).touch()
    (bin_dir / "mmspubench").write_text('#!/bin/sh\necho "ran mmspubench $*"\n')
    (bin_dir / "mmspubench").chmod(0o755)
    for name in ("pyproject.toml", "requirements/eval.lock"):
        os.utime(tmp_path / name, (1, 1))  # older than the stamps: nothing to install
    return tmp_path


def _make(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env_without_make_vars(),
    )


@pytest.mark.process
def test_make_run_ends_by_saying_how_to_reach_the_environment(installed: Path) -> None:
    result = _make(installed, "run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ran = lines.index("ran mmspubench eval --out runs/default")
    after = "\n".join(lines[ran + 1 :])
    assert "  .venv/bin/mmspubench report runs/default" in after
    assert "  . .venv/bin/activate" in after and "make report" in after


@pytest.mark.process
def test_a_dry_run_shows_the_commands_only(installed: Path) -> None:
    assert _make(installed, "-n", "run").stdout.splitlines() == [
        ".venv/bin/mmspubench eval --out runs/default"
    ]


@pytest.mark.process
def test_make_report_shows_the_default_runs_table(installed: Path) -> None:
    result = _make(installed, "report")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "ran mmspubench report runs/default"
    assert "make report" in _make(installed, "help").stdout


def _targets() -> list[str]:
    """The Makefile's own targets: its rules by name and its .PHONY list (not the files it makes)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    rules = re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, flags=re.M)
    phony = re.search(r"^\.PHONY:(.*)$", text, flags=re.M)
    assert rules and phony is not None
    return sorted(set(rules) | set(phony.group(1).split()))


@pytest.mark.process
def test_make_help_lists_every_target(installed: Path) -> None:
    shown = _make(installed, "help").stdout
    assert [target for target in _targets() if not re.search(rf"^make {target} ", shown, flags=re.M)] == []
    assert {"docs-figures", "lock", "test-latest", "main-job"} <= set(_targets())  # the parse finds them


@pytest.mark.process
@pytest.mark.parametrize(("target", "extra"), [("run", "eval"), ("test", "dev")])
def test_the_install_steps_take_the_locks_versions_and_resolve_nothing(
    installed: Path, target: str, extra: str
) -> None:
    os.utime(installed / "pyproject.toml")  # newer than the stamps: the extra is installed again
    (installed / ".venv" / ".stamp-eval").unlink()
    lines = _make(installed, "-n", target).stdout.splitlines()
    installs = [line for line in lines if " -m pip install " in line]
    assert installs == [
        f".venv/bin/python -m pip install -q --no-deps -r requirements/{extra}.lock",
        _EDITABLE,
    ]


@pytest.mark.process
def test_test_latest_installs_the_newest_versions_in_a_venv_of_its_own(installed: Path) -> None:
    lines = _make(installed, "-n", "test-latest").stdout.splitlines()
    assert lines[0] == "rm -rf .venv-latest" and "python3 -m venv .venv-latest" in lines[1]
    assert not any("requirements/" in line or ".venv/" in line for line in lines)
    install = next(line for line in lines if '-e ".[dev]"' in line)
    assert "--upgrade --upgrade-strategy eager -c .venv-latest/torch-pin.txt" in install
    assert 'echo "torch==2.13.0" > .venv-latest/torch-pin.txt' in lines  # torch stays the tested build
    assert lines[-2] == "HF_HUB_OFFLINE=1 .venv-latest/bin/python -m pytest -n auto"
    # then the whole family matrix: fast CGLs against plain on the newest transformers
    assert lines[-1] == "HF_HUB_OFFLINE=1 .venv-latest/bin/python -m pytest -q -m slow tests/eval/families"


@pytest.mark.process
def test_test_latest_skips_its_tests_only_on_the_versions_already_tested(installed: Path) -> None:
    lines = _make(installed, "-n", "test-latest", "LATEST_SAME_AS=.venv-ci").stdout.splitlines()
    guard = "requirements/same-versions.sh .venv-ci .venv-latest || "
    assert lines[-2] == guard + "HF_HUB_OFFLINE=1 .venv-latest/bin/python -m pytest -n auto"
    assert (
        lines[-1]
        == guard + "HF_HUB_OFFLINE=1 .venv-latest/bin/python -m pytest -q -m slow tests/eval/families"
    )


def _fake_dist(venv: Path, name: str, version: str) -> None:
    site = next((venv / "lib").glob("python3*/site-packages"))
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.process
def test_same_versions_compares_every_distribution_but_the_project_and_torchs_cuda_ones(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for venv in (a, b):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        _fake_dist(venv, "mm_spubench", "0.1.0" if venv == a else "0.2.0")  # the project: aside
        _fake_dist(venv, "transformers", "5.24.0")
    _fake_dist(b, "triton", "3.9.0")  # torch's CUDA-only packages: the torch step's, aside
    _fake_dist(b, "nvidia_nccl_cu13", "2.28.9")
    script = str(ROOT / "requirements" / "same-versions.sh")
    same = subprocess.run([script, str(a), str(b)], capture_output=True, text=True)
    assert same.returncode == 0 and "its tests are not repeated" in same.stdout
    _fake_dist(b, "regex", "2026.12.2")
    differs = subprocess.run([script, str(a), str(b)], capture_output=True, text=True)
    assert differs.returncode == 1 and "regex==2026.12.2" in differs.stderr
    missing = subprocess.run([script, str(a), str(tmp_path / "none")], capture_output=True, text=True)
    assert missing.returncode == 1  # the tests run when the comparison cannot be made


@pytest.mark.process
def test_make_test_runs_the_fast_suite_on_every_core(installed: Path) -> None:
    """pytest-xdist (in the dev lock): one worker per core; WORKERS=0 runs the tests in one process."""
    assert _make(installed, "-n", "test").stdout.splitlines()[-1] == (
        "HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -n auto"
    )
    assert _make(installed, "-n", "test", "WORKERS=0").stdout.splitlines()[-1].endswith("pytest -n 0")


@pytest.mark.process
def test_make_lock_runs_the_lock_script_with_the_pinned_uv(installed: Path) -> None:
    assert _make(installed, "-n", "lock").stdout.splitlines() == [
        'PYTHON=python3 TORCH=torch==2.13.0 UV=uv==0.13.9 LOCK_ARGS="" requirements/lock.sh'
    ]
    assert os.access(ROOT / "requirements" / "lock.sh", os.X_OK)


def test_ci_ends_with_the_suite_on_the_newest_versions() -> None:
    """After everything else (it reinstalls from scratch), and a failure there fails CI (the lines
    that print each step's start aside)."""
    commands = [
        c for c in _commands((ROOT / ".ci" / "run").read_text(encoding="utf-8")) if not c.startswith("step ")
    ]
    slow = next(index for index, command in enumerate(commands) if "pytest -m slow" in command)
    assert slow == len(commands) - 2 and commands[-1].startswith(
        "make latest-tests LATEST_SAME_AS=.venv-ci || {"
    )
    assert commands[-1].endswith("exit 1; }")


@pytest.mark.slow
def test_the_editable_install_step_prints_nothing(tmp_path: Path) -> None:
    """The Makefile's own command, for real into a new venv: setuptools' note on editable installs
    (pip 26 shows a build backend's warnings) is not printed on every `make`."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"]
    subprocess.run(pip, check=True, timeout=300, capture_output=True)
    lines = _make(ROOT, "-n", "run", f"VENV={venv}").stdout.splitlines()
    (command,) = [line for line in lines if line.endswith(" --no-deps -e .")]
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Editable installation" not in done.stdout + done.stderr
    version = "import importlib.metadata as m; print(m.version('mm-spubench'))"  # installed (no deps)
    shown = subprocess.run([str(venv / "bin" / "python"), "-c", version], capture_output=True, text=True)
    assert shown.stdout.strip() == PROJECT["version"], shown.stderr


@pytest.mark.process
def test_make_test_on_python_3_10_says_what_it_needs(installed: Path) -> None:
    """dev.lock is for Python 3.11+: one line saying so, before pip meets a version it cannot install."""
    python = installed / ".venv" / "bin" / "python"
    python.write_text('#!/bin/sh\ncase "$*" in *version_info*) exit 1;; -V) echo Python 3.10.13;; esac\n')
    python.chmod(0o755)
    result = _make(installed, "test")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "make: the test environment (the dev extra) needs Python 3.11+, .venv has Python 3.10.13:"
        " make test PYTHON=python3.11 VENV=<a new folder>"
    )
    assert not (installed / ".venv" / ".stamp-dev").exists()
