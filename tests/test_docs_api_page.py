"""The site's API page shows the docstrings' Sphinx roles as references or code, and the Citation
page holds the README's entry, word for word."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.docs_examples import DOCS, README, ROOT

needs_site_tools = pytest.mark.skipif(
    importlib.util.find_spec("griffe") is None or importlib.util.find_spec("mkdocs") is None,
    reason="pip install -e '.[docs]'",
)
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):(?:`|<code>)")


def _roles_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("griffe_sphinx_roles", DOCS / "griffe_sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_site_tools
@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        (":class:`~mmspubench.eval.config.RunConfig`", "[`RunConfig`][mmspubench.eval.config.RunConfig]"),
        (
            ":func:`mmspubench.eval.api.evaluate`",
            "[`mmspubench.eval.api.evaluate`][mmspubench.eval.api.evaluate]",
        ),
        (":func:`~mmspubench.eval.config_checks.check_fields`", "`check_fields`"),  # not on the page
        (":meth:`the check <mmspubench.eval.config.RunConfig.validate>`", "`the check`"),
        (":py:mod:`mmspubench.eval`", "`mmspubench.eval`"),
    ],
)
def test_a_sphinx_role_becomes_a_reference_to_a_rendered_object_or_code(text: str, markdown: str) -> None:
    roles = _roles_module()
    assert roles.rewrite(f"see {text}.", roles.rendered()) == f"see {markdown}."


def _citation(text: str) -> str:
    section = text.split("\n## Citation\n", 1)[1]
    block = re.search(r"```bibtex\n.*?```", section, flags=re.S)
    assert block is not None, "the README lost its citation"
    return block.group(0)


def test_the_citation_page_includes_the_readme_s_citation() -> None:
    page = (DOCS / "citation.md").read_text(encoding="utf-8")
    assert '--8<-- "README.md:citation"' in page  # the snippet: the README's own text
    readme = README.read_text(encoding="utf-8")
    marked = re.search(
        r"<!-- --8<-- \[start:citation\] -->\n(.*?)<!-- --8<-- \[end:citation\] -->", readme, re.S
    )
    assert marked is not None and marked.group(1).strip() == _citation(readme)
    assert "citation.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site's own config built on two pages: the API page and the Citation page."""
    if importlib.util.find_spec("griffe") is None or importlib.util.find_spec("mkdocs") is None:
        pytest.skip("pip install -e '.[docs]'")
    work = tmp_path_factory.mktemp("site")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config.update(nav=["api.md", "citation.md"], docs_dir="docs", site_dir="site")
    config["validation"] = {"links": {"not_found": "info"}}  # api.md links to pages left out here
    config["plugins"][1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (work / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, work / name)
    (work / "docs").mkdir()
    for name in ("api.md", "citation.md", "griffe_package_dir.py", "griffe_sphinx_roles.py"):
        shutil.copy2(DOCS / name, work / "docs" / name)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(work / "mkdocs.yml")]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return work / "site"


def test_the_api_page_shows_no_sphinx_role(site: Path) -> None:
    page = (site / "api.html").read_text(encoding="utf-8")
    assert "RunConfig" in page and not SPHINX_ROLE.findall(page)
    # a role naming an object of the page is a link to it
    assert re.search(r'<a class="autorefs[^"]*"[^>]*href="#mmspubench\.eval\.config\.RunConfig"', page)


def test_the_citation_page_shows_the_readme_s_entry(site: Path) -> None:
    page = (site / "citation.html").read_text(encoding="utf-8")
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    entry = _citation(README.read_text(encoding="utf-8")).split("\n", 1)[1].rsplit("```", 1)[0]
    assert entry.strip() in shown
