"""The package's own source, found through the installed distribution, copied as one importable tree.

A Space repository must install from the package index alone: the Hub installs
``requirements.txt`` before the Space's files are in place, so the project's code travels in the
repository itself (``mmspubench/`` beside ``app.py``) and ``requirements.txt`` lists only the
runtime dependencies, pinned to the versions installed here.

Where each part of the package lives is read from the installed distribution, never from the
checkout's layout: an editable install's finder maps each package to its folder; a regular install
lists its files in ``RECORD``. A later move of folders changes neither.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

DIST_NAME = "mm-spubench"
"""The distribution whose code is vendored."""
TOP_PACKAGE = "mmspubench"
"""The importable package the Space imports."""
RUNTIME_EXTRAS: frozenset[str] = frozenset({"space"})
"""Extras the Space needs (followed through self-references such as ``mm-spubench[eval,models]``)."""
SKIPPED_PARTS: frozenset[str] = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache"})
SKIPPED_SUFFIXES: tuple[str, ...] = (".pyc", ".pyo")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One line of the Space's ``requirements.txt``."""

    name: str
    """Distribution name as the project declares it."""
    version: str
    """Installed version, public part only (``2.13.0`` for ``2.13.0+cpu``: the CPU or CUDA build both satisfy it)."""

    @property
    def line(self) -> str:
        """``name==version``."""
        return f"{self.name}=={self.version}"


def _editable_mapping(dist: metadata.Distribution) -> dict[str, Path]:
    """Package -> folder of an editable install (setuptools' finder module), else empty."""
    mapping: dict[str, Path] = {}
    for file in dist.files or ():
        if file.name.startswith("__editable__") and file.name.endswith("_finder.py"):
            module = importlib.import_module(file.name[: -len(".py")])
            for name, folder in getattr(module, "MAPPING", {}).items():
                mapping[str(name)] = Path(folder)
    return mapping


def _installed_mapping(dist: metadata.Distribution) -> dict[str, Path]:
    """Package -> folder of a regular install (every ``__init__.py`` that RECORD lists)."""
    mapping: dict[str, Path] = {}
    for file in dist.files or ():
        if file.name == "__init__.py" and file.parts[0] == TOP_PACKAGE:
            mapping[".".join(file.parts[:-1])] = Path(str(dist.locate_file(file))).parent
    return mapping


def package_folders() -> dict[str, Path]:
    """Every package of the distribution and the folder it is imported from.

    Names come from every installed copy of the distribution's metadata (an ``egg-info`` in the
    working directory may shadow the editable install's); each folder is where the import system
    finds that package, so what is copied is what runs.
    """
    names = {TOP_PACKAGE}
    for dist in metadata.distributions(name=DIST_NAME):
        names |= set(_editable_mapping(dist)) | set(_installed_mapping(dist))
    folders = {}
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if locations:
            folders[name] = Path(locations[0])
    return folders


def _copy_tree(source: Path, target: Path) -> None:
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n in SKIPPED_PARTS or n.endswith(SKIPPED_SUFFIXES)]

    shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)


OUTSIDE_FILES: tuple[tuple[str, str, str], ...] = (
    ("mmspubench.dataset_builder", "mmspubench.dataset_builder.card", "TEMPLATE_PATH"),
)
"""Files a package reads from outside its own folder: (package, module, constant holding the path).
The dataset card template lives at the top of the source tree; the copy goes where the vendored
module looks for it (the same place relative to the package's folder)."""


def _outside_files(folders: dict[str, Path], out: Path) -> list[Path]:
    written = []
    for package, module, constant in OUTSIDE_FILES:
        path = Path(getattr(importlib.import_module(module), constant)).resolve()
        base = folders[package].resolve().parent
        target = out.joinpath(*package.split(".")).parent / path.relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        written.append(target)
    return written


def vendor_package(out: Path) -> list[Path]:
    """Copy every package of the distribution under ``out`` as ``mmspubench/...``; the paths written."""
    written = []
    folders = package_folders()
    for name, folder in folders.items():
        target = out.joinpath(*name.split("."))
        _copy_tree(folder, target)
        written.append(target)
    return written + _outside_files(folders, out)


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def runtime_requirements(extras: frozenset[str] = RUNTIME_EXTRAS) -> list[Requirement]:
    """The distribution's dependencies for ``extras`` (and the base), pinned to the installed versions."""
    from packaging.requirements import Requirement as Parsed

    declared = metadata.requires(DIST_NAME) or []
    wanted, seen, pending = set(), set(), ["", *sorted(extras)]
    names: dict[str, str] = {}
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in declared:
            req = Parsed(line)
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue
            if req.marker is None and extra:
                continue
            if req.name.lower().replace("_", "-") == DIST_NAME:
                pending.extend(req.extras)
                continue
            key = req.name.lower().replace("_", "-")
            wanted.add(key)
            names[key] = req.name
    out = []
    for key in sorted(wanted):
        try:
            out.append(Requirement(names[key], _public(metadata.version(names[key]))))
        except metadata.PackageNotFoundError:
            from mmspubench.errors import MMSpuBenchError

            raise MMSpuBenchError(
                f"{names[key]} is not installed; the Space pins the tested versions: pip install 'mm-spubench[space]'"
            ) from None
    return out
