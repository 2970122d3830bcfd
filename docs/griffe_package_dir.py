"""A griffe extension: the parts that setuptools' ``package-dir`` maps into ``mmspubench``.

``mmspubench.eval`` lives in ``eval/``, not in ``mmspubench/eval/`` (pyproject.toml's
``[tool.setuptools] package-dir``), and griffe, which reads sources without importing them,
finds only the ``mmspubench/`` folder. When the ``mmspubench`` package has been loaded, this
extension loads each mapped part from where the import system finds it (the installed package's
real path, editable or not) and attaches it under ``mmspubench``, so that
``::: mmspubench.eval.api.evaluate`` resolves to ``eval/api.py``. A part that cannot be found is
an error, and ``mkdocs build --strict`` fails: nothing is skipped, nothing is copied.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import griffe

if sys.version_info >= (3, 11):
    import tomllib
else:  # the docs extra installs tomli on Python 3.10
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
TOP = "mmspubench"


def mapped_parts(pyproject: Path = PYPROJECT) -> list[str]:
    """The subpackages of ``mmspubench`` that ``package-dir`` maps onto folders of their own."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    prefix = TOP + "."
    return sorted(
        name
        for name, folder in mapping.items()
        if name.startswith(prefix)
        and "." not in name[len(prefix) :]
        and folder != f"{TOP}/{name[len(prefix) :]}"
    )


def installed_folder(name: str) -> Path:
    """Where the import system finds the package ``name`` (``eval/`` for ``mmspubench.eval``)."""
    spec = importlib.util.find_spec(name)
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        raise ModuleNotFoundError(f"{name} is not importable: install the package (pip install -e .)")
    return Path(next(iter(locations))).resolve()


class PackageDir(griffe.Extension):
    """Attach the ``package-dir`` parts to ``mmspubench`` once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != TOP:
            return
        for name in mapped_parts():
            child = name.rsplit(".", 1)[1]
            part = loader.load(installed_folder(name), submodules=True)
            if not isinstance(part, griffe.Module):
                raise TypeError(f"{name}: griffe loaded {part!r}, not a package")
            loader.modules_collection.del_member(part.name)  # it was loaded as a top-level package
            pkg.set_member(child, part)
