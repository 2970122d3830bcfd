"""``space build`` / ``space push`` and the ZeroGPU wrapping (fast; the fresh-venv run is in test_deploy_fresh)."""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mmspubench.cli import main
from mmspubench.space.handlers import LIVE_SOURCE, SpaceState
from mmspubench.space.vendor import package_folders

from .test_handlers import state  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("space") / "repo"
    argv = ["space", "build", "--out", str(out), "--dataset", "org/data", "--published-revision", "abc123"]
    assert main(argv) == 0
    return out


def test_build_writes_a_complete_space(built: Path) -> None:
    header = (built / "README.md").read_text().split("---")[1]
    for line in ("sdk: gradio", f"sdk_version: {metadata.version('gradio')}", "app_file: app.py"):
        assert line in header
    assert "suggested_hardware: zero-a10g" in header and "tags:" in header
    app = (built / "app.py").read_text()
    assert "os.environ.setdefault('MMSPUBENCH_DATASET', 'org/data')" in app
    assert "os.environ.setdefault('MMSPUBENCH_PUBLISHED_REVISION', 'abc123')" in app
    lines = [x for x in (built / "requirements.txt").read_text().splitlines() if x and not x.startswith("#")]
    pins = dict(x.split("==") for x in lines)
    # Everything from the index, pinned to what is installed here; nothing of this project.
    assert not any("mm-spubench" in x or x.startswith(("-e", ".", "/")) for x in lines), lines
    for name in ("gradio", "transformers", "datasets", "huggingface_hub", "pandas", "num2words"):
        assert pins[name] == metadata.version(name)
    assert pins["torch"] == metadata.version("torch").split("+")[0]


def test_the_built_folder_follows_the_umask_as_every_other_output(built: Path) -> None:
    import os

    mask = os.umask(0)
    os.umask(mask)
    assert built.stat().st_mode & 0o777 == 0o777 & ~mask  # not a temporary folder's private 0700


def test_a_wheel_that_cannot_be_built_asks_for_the_setuptools_that_helps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setuptools is there (an editable install needs it): what helps is an upgrade, not an install."""
    from mmspubench import wheel as vendor
    from mmspubench.errors import MMSpuBenchError

    failed = subprocess.CompletedProcess([], 1, "", "error: setuptools too old for this layout\n")
    monkeypatch.setattr(vendor.subprocess, "run", lambda *a, **k: failed)
    with pytest.raises(MMSpuBenchError) as err:
        vendor.build_wheel(tmp_path, tmp_path / "work")
    message = str(err.value)
    assert f"with setuptools {metadata.version('setuptools')} (error: setuptools too old" in message
    assert message.endswith("pip install --upgrade setuptools")
    monkeypatch.setattr(vendor, "_setuptools_version", lambda: None)
    with pytest.raises(MMSpuBenchError, match=r"pip install setuptools$"):
        vendor.build_wheel(tmp_path, tmp_path / "work")


@pytest.mark.process
def test_vendored_package_is_every_source_file_and_imports_from_the_folder(built: Path) -> None:
    for name, folder in package_folders().items():
        target = built.joinpath(*name.split("."))
        for source in folder.rglob("*.py"):
            if "__pycache__" not in source.parts:
                assert (target / source.relative_to(folder)).is_file(), source
    from mmspubench.dataset_builder import card

    assert (built / "mmspubench" / "card" / "README.md").read_bytes() == card.TEMPLATE_PATH.read_bytes()
    # -S: the dependencies from site-packages, but not its .pth files (this checkout's editable finder).
    code = (
        f"import sys; sys.path.extend({[p for p in sys.path if p.endswith('site-packages')]!r}); "
        "import mmspubench.space.deploy as d, mmspubench.eval as e, mmspubench.dataset_builder.card as c; "
        "print(d.__file__); print(e.__file__); print(c.TEMPLATE_PATH); assert c.TEMPLATE_PATH.is_file()"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=built, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for line in done.stdout.split():
        assert Path(line).resolve().is_relative_to(built.resolve()), line


def test_build_refuses_a_non_empty_folder_and_leaves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("x")
    assert main(["space", "build", "--out", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    # --overwrite replaces a previous build only, never a folder of other files (a checkout).
    assert main(["space", "build", "--out", str(tmp_path), "--overwrite"]) == 2
    assert "only a folder space build wrote" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


class _FakeApi:
    calls: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, token: str | None = None) -> None:
        pass

    def create_repo(self, repo_id: str, **kw: Any) -> None:
        self.calls.append(("create_repo", (repo_id, kw)))

    def create_commit(self, repo_id: str, operations: list[Any], **kw: Any) -> Any:
        self.calls.append(("create_commit", (repo_id, [op.path_in_repo for op in operations], kw)))
        return types.SimpleNamespace(commit_url="https://hub/commit/1")


def test_push_dry_run_sends_nothing_and_push_is_one_commit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import huggingface_hub

    _FakeApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", _FakeApi)
    assert main(["space", "push", "--repo-id", "org/space", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "add app.py" in out and "add requirements.txt" in out and "nothing sent" in out
    assert _FakeApi.calls == []
    assert main(["space", "push", "--repo-id", "org/space"]) == 0
    (kind, repo), (commit, (repo_id, paths, kw)) = _FakeApi.calls
    assert kind == "create_repo" and repo[1]["repo_type"] == "space" and repo[1]["space_sdk"] == "gradio"
    assert commit == "create_commit" and repo_id == "org/space" and kw["repo_type"] == "space"
    assert {"app.py", "README.md", "requirements.txt", "mmspubench/space/app.py"} <= set(paths)


def test_plain_space_still_launches_and_serve_is_the_same() -> None:
    from mmspubench.cli import build_parser
    from mmspubench.space.cli import _run_space

    for argv in (["space", "--port", "7001"], ["space", "--port", "7001", "serve"]):
        args = build_parser().parse_args(argv)
        assert args.func is _run_space and args.port == 7001


def _fake_spaces(decorated: list[tuple[str, int]], called: list[str]) -> types.ModuleType:
    module = types.ModuleType("spaces")

    def gpu(duration: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            decorated.append((fn.__name__, duration))

            def on_gpu(*args: Any) -> Any:
                called.append(fn.__name__)
                return fn(*args)

            on_gpu.__name__ = fn.__name__
            on_gpu.__wrapped__ = fn  # type: ignore[attr-defined]
            return on_gpu

        return wrap

    module.GPU = gpu  # type: ignore[attr-defined]
    return module


def test_live_handlers_are_wrapped_with_spaces_gpu(
    state: SpaceState,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mmspubench.space.layout import build_app
    from mmspubench.space.zerogpu import LIVE_CGLA_SECONDS, LIVE_RUN_SECONDS

    decorated: list[tuple[str, int]] = []
    called: list[str] = []
    monkeypatch.setitem(sys.modules, "spaces", _fake_spaces(decorated, called))
    demo = build_app(state=state)
    assert sorted(decorated) == [("run_model", LIVE_RUN_SECONDS), ("show_cgla", LIVE_CGLA_SECONDS)]
    show = next(fn for fn in demo.fns.values() if fn.api_name == "show_cgla").fn
    assert show is not None
    show("000000", "org-a", None)  # a results run's CGLA needs no GPU slot
    assert called == []
    show("000000", LIVE_SOURCE, None)  # live scoring: the page's own event goes through the decorated handler
    assert called == ["show_cgla"]


def test_without_spaces_nothing_is_wrapped(state: SpaceState, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from mmspubench.space import handlers, zerogpu

    monkeypatch.setitem(sys.modules, "spaces", None)  # import spaces -> ImportError
    assert zerogpu.on_gpu(handlers.run_model) is handlers.run_model
    assert zerogpu.live_device() == "cpu"
