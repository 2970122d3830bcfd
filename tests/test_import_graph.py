"""The parts depend one way: dataset_builder <- eval <- space, eval <- curate and eval <- sweep (curate, the Space
and the sweep never import each other); the package top's dispatcher sits above them all.

Every import statement is read from the source (module level, inside functions and under
``TYPE_CHECKING`` alike), so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mmspubench
import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = {
    "dataset_builder": "dataset_builder",
    "eval": "eval",
    "space": "space",
    "curate": "curate",
    "sweep": "sweep",
}
"""Package name under ``mmspubench`` -> source folder."""
ALLOWED: dict[str, set[str]] = {
    "dataset_builder": {"errors", "redact", "markup", "options", "outputs", "dataset_builder"},
    "eval": {"errors", "redact", "markup", "options", "outputs", "registry", "dataset_builder", "eval"},
    "space": {
        "errors",
        "redact",
        "markup",
        "options",
        "outputs",
        "app_guard",
        "wheel",
        "dataset_builder",
        "eval",
        "space",
    },
    "curate": {
        "errors",
        "redact",
        "markup",
        "options",
        "outputs",
        "app_guard",
        "dataset_builder",
        "eval",
        "curate",
    },
    # The sweep runs eval, reads its results and verifies fetched runs with submit's checks (all
    # eval); it builds the wheel a remote job installs as `space build` does (mmspubench.wheel).
    "sweep": {
        "errors",
        "redact",
        "markup",
        "options",
        "outputs",
        "registry",
        "wheel",
        "dataset_builder",
        "eval",
        "sweep",
    },
}
"""What each part may import from the ``mmspubench`` namespace (its first component)."""
ENTRY_POINTS = {"eval/cli.py": "the documented `python -m mmspubench.eval.cli` entry point delegates up"}


def _imports(path: Path) -> list[str]:
    """Every ``mmspubench...`` module named by an import statement of ``path``."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [n for n in names if n == "mmspubench" or n.startswith("mmspubench.")]


def _private_imports(path: Path) -> list[str]:
    """Every underscore name ``path`` imports from another ``mmspubench`` module (``from m import _x``)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mmspubench"):
            names.extend(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            )
    return names


def _upward(part: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / PARTS[part]).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ENTRY_POINTS:
            continue
        for name in _imports(path):
            first = name.split(".")[1] if "." in name else "<package top>"
            if first not in ALLOWED[part]:
                bad.append(f"{rel} imports {name}")
    return bad


def test_dataset_builder_imports_nothing_above_it() -> None:
    assert _upward("dataset_builder") == []


def test_eval_imports_nothing_above_it() -> None:
    assert _upward("eval") == []


def test_space_imports_nothing_above_it() -> None:
    assert _upward("space") == []


def test_curate_imports_nothing_above_it() -> None:
    assert _upward("curate") == []


def test_sweep_imports_nothing_above_it() -> None:
    assert _upward("sweep") == []


def test_the_sweep_and_the_space_never_import_each_other() -> None:
    """The wheel both build (``space build``, a sweep's HF Jobs) lives below them, in
    ``mmspubench/wheel.py``, which imports only the errors and the secret check."""
    assert not any(
        name.startswith("mmspubench.space")
        for path in (ROOT / "sweep").rglob("*.py")
        for name in _imports(path)
    )
    assert set(_imports(ROOT / "mmspubench" / "wheel.py")) == {"mmspubench.errors", "mmspubench.redact"}


def test_no_part_imports_the_sweep() -> None:
    """eval (and every other part) never depends on the sweep: only the dispatcher registers it."""
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for part in PARTS
        if part != "sweep"
        for path in sorted((ROOT / PARTS[part]).rglob("*.py"))
        for name in _imports(path)
        if name.startswith("mmspubench.sweep")
    ]
    assert bad == []


def test_curate_and_the_space_do_not_import_each_other() -> None:
    assert "space" not in ALLOWED["curate"] and "curate" not in ALLOWED["space"]


def test_no_module_imports_another_modules_private_names() -> None:
    bad = [
        f"{path.relative_to(ROOT).as_posix()} imports {name}"
        for folder in [*PARTS.values(), "mmspubench"]
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in _private_imports(path)
    ]
    assert bad == []


def test_the_shared_model_modules_sit_below_every_backend() -> None:
    """``eval/checkpoint`` imports no backend, and no backend imports another one's modules: what two
    engines share lives in ``checkpoint`` (the registry imports every declaration)."""
    bad = [
        f"{path.relative_to(ROOT).as_posix()} imports {name}"
        for path in sorted((ROOT / "eval" / "checkpoint").rglob("*.py"))
        for name in _imports(path)
        if name.startswith("mmspubench.eval.backends")
    ]
    backends = ROOT / "eval" / "backends"
    bad += [
        f"{path.relative_to(ROOT).as_posix()} imports {name}"
        for path in sorted(backends.rglob("*.py"))
        for name in _imports(path)
        if name.startswith("mmspubench.eval.backends.transformers")
        and path.relative_to(backends).parts[0] not in ("transformers", "__init__.py", "registry.py")
    ]
    assert bad == []


ANALYSIS = "mmspubench.eval.analysis"
ANALYSIS_USERS = {"eval/commands.py": "the command table registers `report` and `compare`"}
"""The only modules of eval/ outside eval/analysis/ that may import analysis (command wiring)."""
ANALYSIS_MAY_NOT_IMPORT = ("mmspubench.eval.runner", "mmspubench.eval.backends", "mmspubench.eval.tiny")
"""Running parts analysis never needs: it reads run folders and records, it does not run models."""


def _imports_analysis(path: Path) -> list[str]:
    return [n for n in _imports(path) if n == ANALYSIS or n.startswith(ANALYSIS + ".")]


VIEWS_DIR = "eval/views/"
"""The views declare their report tables and plot panels as hooks that import analysis when they
run (``report``, ``--plot``), never at module level: a run loads no analysis module."""
VIEW_ANALYSIS_MODULES = ("panels.py", "report.py")
"""A view package's report tables and plot panels: analysis code kept with its view, imported only
by the view's hooks when they run (``test_a_run_loads_no_analysis_module`` checks that a run loads
none of them)."""


def _view_analysis_module(rel: str) -> bool:
    return rel.startswith(VIEWS_DIR) and rel.rsplit("/", 1)[-1] in VIEW_ANALYSIS_MODULES


def _module_level_imports(path: Path) -> list[str]:
    """The ``mmspubench...`` modules imported when ``path`` is imported (not inside a function)."""
    names: list[str] = []
    pending: list[ast.AST] = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            pending.extend(ast.iter_child_nodes(node))
        elif isinstance(node, ast.ClassDef):
            pending.extend(node.body)
    return [n for n in names if n == ANALYSIS or n.startswith(ANALYSIS + ".")]


def _running_imports_of_analysis() -> list[str]:
    """Every module of eval/ that runs (runner, records, run folder, metrics, backends, ...) and
    imports ``mmspubench.eval.analysis`` (a view's module: at module level)."""
    return [
        f"{rel} imports {name}"
        for path in sorted((ROOT / "eval").rglob("*.py"))
        if not (rel := path.relative_to(ROOT).as_posix()).startswith("eval/analysis/")
        and rel not in ANALYSIS_USERS
        and not _view_analysis_module(rel)
        for name in (_module_level_imports(path) if rel.startswith(VIEWS_DIR) else _imports_analysis(path))
    ]


@pytest.mark.process
def test_a_run_loads_no_analysis_module() -> None:
    """What ``mmspubench eval`` imports to run (the runner, every view) pulls in no analysis module."""
    code = (
        "import sys\n"
        "import mmspubench.eval.runner, mmspubench.eval.views.registry, mmspubench.eval.commands\n"
        "print(sorted(m for m in sys.modules if m.startswith('mmspubench.eval.analysis')\n"
        "    or m.startswith('mmspubench.eval.views.') and m.endswith(('.panels', '.report'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_views_lazy_rule_still_sees_a_module_level_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("if True:\n    from mmspubench.eval.analysis import plots\n", encoding="utf-8")
    assert _module_level_imports(bad) == ["mmspubench.eval.analysis"]
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from mmspubench.eval.analysis import plots\n", encoding="utf-8")
    assert _module_level_imports(lazy) == []


def test_running_never_imports_analysis() -> None:
    assert _running_imports_of_analysis() == []


def test_analysis_does_not_import_the_running_parts() -> None:
    bad = [
        f"{path.relative_to(ROOT).as_posix()} imports {name}"
        for path in sorted((ROOT / "eval").rglob("*.py"))
        if path.relative_to(ROOT).as_posix().startswith("eval/analysis/")
        or _view_analysis_module(path.relative_to(ROOT).as_posix())
        for name in _imports(path)
        if name.startswith(ANALYSIS_MAY_NOT_IMPORT)
    ]
    assert bad == []


def test_the_analysis_modules_live_in_eval_analysis() -> None:
    moved = ("report", "compare", "compare_cli", "compare_runs", "plots", "plot_data")
    assert [m for m in moved if (ROOT / "eval" / f"{m}.py").exists()] == []
    assert all((ROOT / "eval" / "analysis" / f"{m}.py").is_file() for m in ("report", "plots", "plot_data"))


def test_compare_is_one_sub_package() -> None:
    """``compare``'s modules live in eval/analysis/compare/, none beside it with a ``compare_`` prefix."""
    analysis = ROOT / "eval" / "analysis"
    parts = ("__init__", "cli", "runs", "side_intervention", "paired", "confounds", "interventions")
    assert all((analysis / "compare" / f"{m}.py").is_file() for m in parts)
    assert sorted(p.name for p in analysis.glob("compare*.py")) == []


def test_the_checker_sees_running_import_analysis(tmp_path: Path) -> None:
    bad = tmp_path / "runner.py"
    bad.write_text(
        "def f():\n    from mmspubench.eval.analysis.report import markdown_table\n", encoding="utf-8"
    )
    assert _imports_analysis(bad) == ["mmspubench.eval.analysis.report"]
    lazy = tmp_path / "records.py"
    lazy.write_text("import mmspubench.eval.analysis as a\n", encoding="utf-8")
    assert _imports_analysis(lazy) == ["mmspubench.eval.analysis"]


def test_the_checker_sees_a_private_import(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from mmspubench.eval.loading import _hidden\n", encoding="utf-8")
    assert _private_imports(bad) == ["mmspubench.eval.loading._hidden"]


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from mmspubench.space import layout\n", encoding="utf-8")
    assert _imports(bad) == ["mmspubench.space"]


def test_errors_module_imports_nothing_of_the_package() -> None:
    assert _imports(ROOT / "mmspubench" / "errors.py") == []
    assert _imports(ROOT / "mmspubench" / "redact.py") == []


def test_markup_module_imports_nothing_of_the_package() -> None:
    assert _imports(ROOT / "mmspubench" / "markup.py") == []
    assert _imports(ROOT / "mmspubench" / "options.py") == []


def test_the_registry_type_imports_only_the_errors() -> None:
    assert _imports(ROOT / "mmspubench" / "registry.py") == ["mmspubench.errors"]


def test_the_app_guard_imports_only_the_neutral_modules() -> None:
    assert set(_imports(ROOT / "mmspubench" / "app_guard.py")) <= {"mmspubench.errors", "mmspubench.markup"}


@pytest.mark.process
def test_package_top_lists_the_api_and_stays_light() -> None:
    for name in ("evaluate", "load_benchmark", "generate_items", "load_model", "Item", "MMSpuBenchError"):
        assert name in mmspubench.__all__
    code = "import sys, mmspubench, mmspubench.cli; print(sorted({'torch', 'transformers', 'gradio'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_resolves() -> None:
    for name in mmspubench.__all__:
        assert getattr(mmspubench, name) is not None, name


def test_every_package_folder_ships_in_the_wheel() -> None:
    """Each folder of a mapped part that holds Python modules is in pyproject's ``packages`` list
    (a folder left out installs from a checkout, editable, and is missing from the wheel)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setup["packages"])
    found = set()
    for name, folder in setup["package-dir"].items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder).parts
            if not any(part.startswith((".", "__")) for part in rel):
                found.add(".".join((name, *rel)))
    assert sorted(found - listed) == []
    assert "mmspubench.eval.views" in listed
