"""The package's files as its wheel ships them, copied as one importable tree.

A Space repository must install from the package index alone: the Hub installs
``requirements.txt`` before the Space's files are in place, so the project's code travels in the
repository itself (``mmspubench/`` beside ``app.py``) and ``requirements.txt`` lists only the
runtime dependencies, pinned to the versions installed here.

What is copied is what a wheel of the installed distribution holds, never a folder's contents:
an editable install's checkout is built into a wheel by setuptools (its ``packages`` and
``package-data`` decide), a regular install's files are those its ``RECORD`` lists. A ``.env``,
a run folder or Gradio's ``.gradio/flagged/`` left beside the sources is not shipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from mmspubench.errors import MMSpuBenchError
from mmspubench.wheel import build_wheel

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


def _editable_source(dist: metadata.Distribution) -> Path | None:
    """The checkout an editable install points at (PEP 610 ``direct_url.json``), else ``None``."""
    text = dist.read_text("direct_url.json")
    try:
        info = json.loads(text) if text else {}
    except ValueError:
        return None
    url = str(info.get("url") or "") if isinstance(info, dict) else ""
    editable = isinstance(info, dict) and bool((info.get("dir_info") or {}).get("editable"))
    if not editable or not url.startswith("file:"):
        return None
    return Path(url2pathname(urlparse(url).path))


def _from_wheel(source: Path, out: Path) -> list[Path]:
    with tempfile.TemporaryDirectory(prefix="mmspubench-wheel-") as tmp:
        wheel, _ = build_wheel(source, Path(tmp))
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.split("/")[0] == TOP_PACKAGE and not n.endswith("/")]
            for name in names:
                target = out.joinpath(*name.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    return [out.joinpath(*n.split("/")) for n in names]


def _from_record(dist: metadata.Distribution, out: Path) -> list[Path]:
    written = []
    for file in dist.files or ():
        if (
            file.parts[0] != TOP_PACKAGE
            or SKIPPED_PARTS & set(file.parts)
            or file.name.endswith(SKIPPED_SUFFIXES)
        ):
            continue
        target = out.joinpath(*file.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(str(dist.locate_file(file))), target)
        written.append(target)
    return written


def wheel_source() -> tuple[metadata.Distribution, Path | None]:
    """The installed distribution and, for an editable install, its checkout (else ``None``).

    An ``egg-info`` in the working directory (no RECORD, no ``direct_url.json``) is passed over.
    """
    found = list(metadata.distributions(name=DIST_NAME))
    for dist in found:
        source = _editable_source(dist)
        if source is not None:
            return dist, source
    for dist in found:
        if dist.read_text("RECORD"):
            return dist, None
    raise MMSpuBenchError(f"{DIST_NAME} is not installed; space build vendors the installed package")


def vendor_package(out: Path) -> list[Path]:
    """Write exactly the files the package's wheel ships under ``out`` (``mmspubench/...``).

    An editable install: the wheel is built from its checkout with setuptools, so the package
    configuration (``packages``, ``package-data``) decides, not the folders' contents: a ``.env``,
    a run folder or Gradio's ``.gradio/`` beside the sources is not shipped. A regular install:
    the files its RECORD lists (what the wheel held). Then the files a package reads from outside
    its folder (:data:`OUTSIDE_FILES`).
    """
    dist, source = wheel_source()
    written = _from_wheel(source, out) if source is not None else _from_record(dist, out)
    return written + _outside_files(package_folders(), out)


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
            raise MMSpuBenchError(
                f"{names[key]} is not installed; the Space pins the tested versions: pip install 'mm-spubench[space]'"
            ) from None
    return out
