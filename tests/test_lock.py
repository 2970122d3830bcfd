"""requirements/*.lock against pyproject.toml: every requirement of the locked extra has one pinned
version inside pyproject's range on every Python and platform the lock is for, and the two locks
agree. A lock left stale by a change to pyproject.toml fails here; `make lock` rewrites it."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # the docs extra brings tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
TORCH = Version(re.search(r"^TORCH := torch==(\S+)$", MAKEFILE, flags=re.M).group(1))  # type: ignore[union-attr]
# What the torch step brings (torch and its CUDA build's packages), never the lock.
TORCH_STEP = re.compile(r"^(torch|triton|nvidia-.+|cuda-.+)$")
# (extra, the lowest Python it is locked for).
LOCKS = {"dev": "3.11", "eval": "3.10"}
PLATFORMS = [("linux", "Linux", "x86_64"), ("linux", "Linux", "aarch64"), ("darwin", "Darwin", "arm64")]
PLATFORMS += [("win32", "Windows", "AMD64")]
PYTHONS = ["3.10.12", "3.11.0", "3.11.9", "3.12.5", "3.13.1"]


@dataclass(frozen=True)
class Pin:
    """One line of a lock."""

    name: str
    """The package, canonicalised (PEP 503)."""
    version: Version
    """The pinned version."""
    marker: Marker | None
    """Where the line applies (None: everywhere)."""


def _pins(extra: str) -> list[Pin]:
    pins = []
    for line in (ROOT / "requirements" / f"{extra}.lock").read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            requirement = Requirement(line)
            (specifier,) = requirement.specifier  # one `==` each
            assert specifier.operator == "==", line
            pins.append(
                Pin(canonicalize_name(requirement.name), Version(specifier.version), requirement.marker)
            )
    return pins


def _requirements(extra: str) -> list[Requirement]:
    """The requirements an install of `mm-spubench[extra]` asks for, the package's own extras expanded."""
    found: list[Requirement] = []
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        lines = PROJECT["dependencies"] if name == "" else PROJECT["optional-dependencies"][name]
        for line in lines:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) == canonicalize_name(PROJECT["name"]):
                todo.extend(requirement.extras)
            else:
                found.append(requirement)
        todo.append("")
    return found


def _environments(extra: str) -> list[dict[str, str]]:
    lowest = Version(LOCKS[extra])
    return [
        {
            "python_version": ".".join(python.split(".")[:2]),
            "python_full_version": python,
            "implementation_name": "cpython",
            "implementation_version": python,
            "platform_python_implementation": "CPython",
            "os_name": "nt" if sys_platform == "win32" else "posix",
            "sys_platform": sys_platform,
            "platform_system": system,
            "platform_machine": machine,
            "platform_release": "",
            "platform_version": "",
            "extra": "",
        }
        for python in PYTHONS
        if Version(python) >= lowest
        for sys_platform, system, machine in PLATFORMS
    ]


def _resolved(extra: str, environment: dict[str, str]) -> dict[str, Version]:
    """The lock as pip installs it in one environment: one version per package."""
    chosen: dict[str, Version] = {}
    for pin in _pins(extra):
        if pin.marker is None or pin.marker.evaluate(environment):
            assert pin.name not in chosen, f"{extra}.lock pins {pin.name} twice for {environment}"
            chosen[pin.name] = pin.version
    return chosen


def _where(environment: dict[str, str]) -> str:
    return f"Python {environment['python_full_version']} on {environment['sys_platform']} {environment['platform_machine']}"


@pytest.mark.parametrize("extra", LOCKS)
def test_the_lock_holds_every_requirement_inside_pyprojects_range(extra: str) -> None:
    stale: dict[str, list[str]] = {}  # what is wrong -> where
    for environment in _environments(extra):
        chosen = _resolved(extra, environment)
        for requirement in _requirements(extra):
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            name = canonicalize_name(requirement.name)
            version = TORCH if name == "torch" else chosen.get(name)
            if version is None:
                stale.setdefault(f"{requirement} is not in {extra}.lock", []).append(_where(environment))
            elif not requirement.specifier.contains(version, prereleases=True):
                wrong = f"{extra}.lock has {name}=={version}, pyproject.toml asks {requirement}"
                stale.setdefault(wrong, []).append(_where(environment))
    lines = [f"{wrong} ({where[0]}, {len(where)} places in all)" for wrong, where in sorted(stale.items())]
    assert not lines, "requirements/ is stale, run `make lock`:\n" + "\n".join(lines)


@pytest.mark.parametrize("extra", LOCKS)
def test_the_lock_leaves_torch_and_its_cuda_packages_to_the_torch_step(extra: str) -> None:
    assert [pin.name for pin in _pins(extra) if TORCH_STEP.match(pin.name)] == []
    header = (ROOT / "requirements" / f"{extra}.lock").read_text(encoding="utf-8").split("\n\n")[0]
    assert f"--extra {extra} --universal" in header and f"--python-version {LOCKS[extra]}" in header
    assert f"torch=={TORCH}" in header and "make lock" in header
    uv = re.search(r"^UV := (uv==\S+)$", MAKEFILE, flags=re.M)
    assert uv is not None and uv.group(1) in header


def test_the_main_jobs_lock_agrees_with_the_test_lock() -> None:
    """`make run` and `make test` share one environment: no package changes version between them."""
    for environment in _environments("dev"):
        dev, main = _resolved("dev", environment), _resolved("eval", environment)
        differ = {
            name: (version, dev.get(name)) for name, version in main.items() if dev.get(name) != version
        }
        assert differ == {}, f"eval.lock vs dev.lock for {_where(environment)}"


def test_a_requirement_outside_the_lock_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a narrowed range in pyproject.toml makes the lock stale."""
    narrowed = dict(PROJECT, dependencies=[*PROJECT["dependencies"], "pillow<1"])
    monkeypatch.setattr(sys.modules[__name__], "PROJECT", narrowed)
    with pytest.raises(
        AssertionError, match=r"eval.lock has pillow==\S+, pyproject.toml asks pillow<1 \(Python 3.10"
    ):
        test_the_lock_holds_every_requirement_inside_pyprojects_range("eval")
