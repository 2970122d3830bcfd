"""The README as a front page, the figures as the script's output, the API reference resolved."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs_examples import DOCS, README, ROOT, pages

README_MAX_LINES = 250
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _load(path: Path) -> ModuleType:
    """A script or build module that is not part of the package (bench/, docs/)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURES = _load(ROOT / "bench" / "docs_figures.py")


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings == [
        "Set up",
        "The main job",
        "Evaluate your model",
        "Confounds: circular, blind, worst type, calibration",
        "Guarantees",
        "Five parts",
        "Documentation",
        "Citation",
    ]
    assert "![" in text.split("## Set up")[0], "the figure comes before the set-up"
    evaluate = re.search(r"## Evaluate your model\n\n```bash\n(.*?)```", text, flags=re.S)
    assert evaluate is not None
    lines = evaluate.group(1).splitlines()
    assert len(lines) == 5 and all(line.startswith("mmspubench ") for line in lines)
    engines = " ".join(lines)
    assert "--backend vllm" in engines and "--backend openai" in engines and "--device cuda" in engines
    confounds = text.split("## Confounds: ", 1)[1].split("\n## ", 1)[0]
    for link in (
        "docs/metrics/confounds.md",
        "docs/experiments/positive-controls.md",
        "bench/confound_controls.py",
    ):
        assert link in confounds, f"the Confounds section lost {link}"


def test_the_readme_guarantees_name_every_kind_of_promise_and_link_the_full_list() -> None:
    """The front page's short list covers each kind of promise; the page holds them all."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Guarantees\n", 1)[1].split("\n## ", 1)[0]
    kinds = re.findall(r"^- \*\*([^*]+)\*\*", section, flags=re.M)
    assert [k.rstrip(".") for k in kinds] == [
        "Security",
        "Forgery and wrong results",
        "Lost data",
        "Hangs and tracebacks",
        "Validation",
        "Nothing misleading",
        "A first hour without a stumble",
    ]
    assert "(docs/guarantees.md)" in section


def _links(page: Path) -> list[str]:
    return [link for link in _LINK.findall(page.read_text(encoding="utf-8")) if "://" not in link]


def test_every_link_of_the_readme_reaches_a_file() -> None:
    """GitHub shows the README with relative links; the site's own links are checked by mkdocs --strict."""
    missing = [link for link in _links(README) if not (ROOT / link.split("#", 1)[0]).exists()]
    assert missing == []
    assert {link.split("#", 1)[0] for link in _links(README) if link.startswith("docs/")} >= {
        str(p.relative_to(ROOT)) for p in pages() if p.parent == DOCS
    }, "a top-level page the README does not link to"


def test_every_figure_shown_is_one_the_script_draws() -> None:
    shown = [
        (page, link)
        for page in [README, *pages()]
        for link in _links(page)
        if link.lower().endswith((".png", ".svg", ".jpg"))
    ]
    assert shown, "no figure at all"
    drawn = (*FIGURES.FIGURES, *FIGURES.SCREENSHOTS)
    for page, link in shown:
        target = (page.parent / link).resolve()
        assert target.parent == DOCS / "figures" and target.name in drawn, (page, link)
    assert {(page.parent / link).resolve().name for page, link in shown} == set(drawn)
    for name in (*drawn, *FIGURES.TABLES):
        assert (DOCS / "figures" / name).stat().st_size > 0, name


def test_every_included_table_is_one_the_script_prints() -> None:
    included = {
        m
        for page in pages()
        for m in re.findall(r'^--8<-- "([^"]+)"$', page.read_text(encoding="utf-8"), re.M)
    }
    tables = {m for m in included if m.startswith("docs/figures/")}
    assert tables == {f"docs/figures/{name}" for name in FIGURES.TABLES}
    assert included - tables == {"README.md:citation"}  # the Citation page shows the README's entry


@pytest.mark.slow
def test_the_committed_tables_are_what_the_script_prints_now(tmp_path: Path) -> None:
    """`make docs-figures` from scratch: four real runs of the bundled models (several minutes)."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "docs_figures.py"),
            "--out",
            str(tmp_path / "figures"),
            "--no-space",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    for name in FIGURES.TABLES:
        fresh = (tmp_path / "figures" / name).read_text(encoding="utf-8")
        assert fresh == (DOCS / "figures" / name).read_text(encoding="utf-8"), name
    for name in FIGURES.FIGURES:
        assert (tmp_path / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


# The API reference: griffe reads sources, and setuptools' package-dir puts mmspubench.eval in eval/.

EXTENSION = ROOT / "docs" / "griffe_package_dir.py"
needs_griffe = pytest.mark.skipif(
    importlib.util.find_spec("griffe") is None, reason="pip install -e '.[docs]'"
)


def test_the_extension_maps_the_parts_pyproject_maps_from_where_python_imports_them() -> None:
    extension = _load(EXTENSION) if importlib.util.find_spec("griffe") else None
    if extension is None:
        pytest.skip("griffe is not installed: pip install -e '.[docs]'")
    parts = extension.mapped_parts()
    assert parts == [
        "mmspubench.curate",
        "mmspubench.dataset_builder",
        "mmspubench.eval",
        "mmspubench.space",
        "mmspubench.sweep",
    ]
    for name in parts:
        assert extension.installed_folder(name) == ROOT / name.split(".", 1)[1]
    with pytest.raises(ModuleNotFoundError, match="not importable"):
        extension.installed_folder("mmspubench.no_such_part")


def _api_identifiers() -> list[str]:
    return re.findall(r"^::: ([\w.]+)$", (DOCS / "api.md").read_text(encoding="utf-8"), flags=re.M)


@needs_griffe
def test_every_api_reference_resolves_with_the_extension_and_not_without() -> None:
    import griffe

    identifiers = _api_identifiers()
    assert {"mmspubench.eval.api.evaluate", "mmspubench.eval.config.RunConfig"} <= set(identifiers)
    assert "mmspubench.dataset_builder.load.load_benchmark" in identifiers
    assert "mmspubench.eval.backends.plugin.Backend" in identifiers
    extension = _load(EXTENSION).PackageDir()
    loader = griffe.GriffeLoader(extensions=griffe.load_extensions(extension), search_paths=[str(ROOT)])
    loader.load("mmspubench")
    for identifier in identifiers:
        obj = loader.modules_collection.get_member(identifier)
        assert obj.docstring is not None, f"{identifier} has no docstring to show"
        assert obj.filepath == ROOT / Path(*_source_parts(identifier)), identifier
    plain = griffe.GriffeLoader(search_paths=[str(ROOT)])
    plain.load("mmspubench")
    with pytest.raises(KeyError):
        plain.modules_collection.get_member("mmspubench.eval.api.evaluate")


def _source_parts(identifier: str) -> list[str]:
    """``mmspubench.eval.api.evaluate`` -> ``eval/api.py``; ``mmspubench.options.option`` -> ``mmspubench/options.py``."""
    module = identifier.split(".")[:-1]  # every reference on the page is a module's object
    if module[1] in {"eval", "dataset_builder", "space", "curate"}:
        module = module[1:]
    return [*module[:-1], module[-1] + ".py"]
