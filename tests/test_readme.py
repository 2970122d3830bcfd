"""The README, the front page: its Python examples run as written (offline, on the bundled model and
release), its set-up commands are the Makefile's targets that CI runs too, and the main job prints what
it shows. The documentation pages' examples: tests/test_docs.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_examples() -> None:
    assert BLOCKS, "the README lost its Python examples"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {"__name__": "__readme__"})


# The set-up: the README opens with two commands, which are the Makefile's targets, and CI runs the same one.
ROOT = README.parent
MAIN_JOB = "mmspubench eval --out runs/default"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


# The extra's locked versions, then the package, neither resolving anything (requirements/*.lock).
_LOCKED = ".venv/bin/python -m pip install -q --no-deps -r requirements/{extra}.lock"
_EDITABLE = 'PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q --no-deps -e .'


def _commands(block: str) -> list[str]:
    """The commands of a shell block: its lines without comments and blank lines."""
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of the Makefile, pyproject.toml and the locks, so that make touches nothing of the checkout."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    return tmp_path


def _make(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`make ARGS` in workdir, with none of the Makefile's variables set from outside."""
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env_without_make_vars(),
    )


def _env_without_make_vars() -> dict[str, str]:
    """The environment without the Makefile's variables, so that the defaults are what is tested.

    Every `NAME ?=` of the Makefile is left out: a variable given on an outer make's command line
    (CI's `make test-latest LATEST_SAME_AS=.venv-ci`) reaches this suite's environment."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    names = set(re.findall(r"^([A-Z_]+) \?=", makefile, flags=re.M))
    names |= {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    return {key: value for key, value in os.environ.items() if key not in names}


def test_the_readme_opens_with_the_two_make_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = re.search(r"```(\w*)\n(.*?)```", text, flags=re.S)
    assert first_block is not None and first_block.group(1) == "bash"
    assert _commands(first_block.group(2)) == ["make run", "make test"]


@pytest.mark.process
@needs_make
def test_make_run_and_make_test_install_then_run_the_main_job_and_the_suite(workdir: Path) -> None:
    run, test = _make(workdir, "-n", "run"), _make(workdir, "-n", "test")
    assert run.returncode == 0 and test.returncode == 0, run.stderr + test.stderr
    run_lines, test_lines = run.stdout.splitlines(), test.stdout.splitlines()
    assert "python3 -m venv .venv" in run_lines[0] and "python3 -m venv .venv" in test_lines[0]
    torch = [line for line in run_lines if "torch==2.13.0" in line]
    assert len(torch) == 1 and "--index-url" not in torch[0]  # the default: plain PyPI
    assert run_lines.index(torch[0]) < run_lines.index(_LOCKED.format(extra="eval"))
    assert run_lines[-1] == f".venv/bin/{MAIN_JOB}"
    assert (
        test_lines.index(torch[0])
        < test_lines.index(_LOCKED.format(extra="dev"))
        < test_lines.index(_EDITABLE)
    )
    assert test_lines[-1].endswith(".venv/bin/python -m pytest -n auto")
    # The README's main job is the one `make run` runs.
    assert f"```bash\n{MAIN_JOB}\n```" in README.read_text(encoding="utf-8")


@pytest.mark.process
@needs_make
@pytest.mark.parametrize("changed", ["pyproject.toml", "requirements/eval.lock"])
def test_make_is_quick_once_installed_and_reinstalls_after_pyproject_or_the_lock_changes(
    workdir: Path, changed: str
) -> None:
    (workdir / ".venv" / "bin").mkdir(parents=True)
    for name in ("bin/python", ".stamp-torch", ".stamp-eval"):
        (workdir / ".venv" / name).touch()
    for name in ("pyproject.toml", "requirements/eval.lock"):
        os.utime(workdir / name, (1, 1))
    assert _make(workdir, "-n", "run").stdout.splitlines() == [f".venv/bin/{MAIN_JOB}"]
    os.utime(workdir / changed)  # now newer than the stamps
    assert _make(workdir, "-n", "run").stdout.splitlines() == [
        _LOCKED.format(extra="eval"),
        _EDITABLE,
        "touch .venv/.stamp-eval",
        f".venv/bin/{MAIN_JOB}",
    ]


@pytest.mark.process
@needs_make
def test_torch_index_picks_the_cpu_build_as_the_readme_says(workdir: Path) -> None:
    dry = _make(workdir, "-n", "test", f"TORCH_INDEX={CPU_INDEX}", "VENV=.venv-ci", "PYTEST_ARGS=-k x")
    assert f".venv-ci/bin/python -m pip install -q torch==2.13.0 --index-url {CPU_INDEX}" in dry.stdout
    assert dry.stdout.splitlines()[-1].endswith(".venv-ci/bin/python -m pytest -n auto -k x")
    text = README.read_text(encoding="utf-8")
    assert f"make run TORCH_INDEX={CPU_INDEX}" in text
    assert f"pip install torch==2.13.0 --index-url {CPU_INDEX}" in text


@pytest.mark.process
@needs_make
@pytest.mark.parametrize("python", ["missing", "too old"])
def test_make_without_a_working_python_says_what_to_install(workdir: Path, python: str) -> None:
    interpreter = workdir / "python3"  # "too old": a Python whose version check fails, otherwise real
    if python == "too old":
        interpreter.write_text(
            f'#!/bin/sh\ncase "$*" in *version_info*) exit 1;; esac\nexec {sys.executable} "$@"\n'
        )
        interpreter.chmod(0o755)
    result = _make(workdir, "run", f"PYTHON={interpreter}")
    assert result.returncode != 0
    assert "Python 3.10+ with venv is needed (Debian/Ubuntu: apt install python3-venv)" in result.stderr
    assert not (workdir / ".venv").exists() and not (workdir / "runs").exists()


def test_ci_runs_the_readme_test_command() -> None:
    commands = _commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert "make test VENV=.venv-ci" in commands
    pytest_runs = [command for command in commands if "pytest" in command]
    # The fast suite runs through `make test` only; pytest itself runs only the slow one.
    assert pytest_runs and all("-m slow" in command for command in pytest_runs)
    lint = commands.index("ruff check .")
    assert commands.index("make test VENV=.venv-ci") < lint < commands.index(pytest_runs[0])


def _shown_output() -> list[str]:
    """The lines the README shows under the main job, timings left out."""
    text = README.read_text(encoding="utf-8")
    shown = re.search(rf"```bash\n{MAIN_JOB}\n```.*?```text\n(.*?)```", text, flags=re.S)
    assert shown is not None, "the README lost the main job's output"
    return [_untimed(line) for line in shown.group(1).splitlines()]


def _untimed(line: str) -> str:
    return re.sub(r"CGLA scoring [\d.]+s, total [\d.]+s", "CGLA scoring Ts, total Ts", line)


@pytest.mark.slow
def test_the_main_job_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """The bundled model on the bundled release, as `make run` runs it (about a minute)."""
    command = [sys.executable, "-m", "mmspubench.cli", *MAIN_JOB.split()[1:], "--no-progress"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    printed = [_untimed(line) for line in done.stdout.splitlines()]
    assert [line for line in _shown_output() if line not in printed] == []


def test_the_shown_output_is_the_closing_line_and_the_files() -> None:
    lines = _shown_output()
    assert lines[0].startswith("accuracy 28.89% (95% CI 20.00-37.78; n=90, unparsed 10); CGLA_acc 97.78%")
    assert lines[1:] == ["results: runs/default/results.json", "samples: runs/default/samples.jsonl"]


def _section(text: str, heading: str) -> str:
    found = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#+ |\Z)", text, flags=re.S | re.M)
    assert found is not None, f"lost the section {heading!r}"
    return found.group(1)


def test_the_confound_command_is_the_metrics_page_s() -> None:
    """The README's confound run measures what the metrics page's does (CGLA too), word for word."""
    heading = "Confounds: circular, blind, worst type, calibration"
    readme = _commands(_section(README.read_text(encoding="utf-8"), heading))
    page = _commands((ROOT / "docs" / "metrics" / "confounds.md").read_text(encoding="utf-8"))
    views = [c for c in readme if c.startswith("mmspubench eval ") and "--out runs/views" in c]
    assert views == [
        "mmspubench eval --answer-mode logprob --metrics accuracy,cgla,circular,blind,calibration --out runs/views"
    ]
    assert views[0] in page
