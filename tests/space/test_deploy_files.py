"""``space build``: exactly the wheel's files, a marker-guarded ``--overwrite``, no output inside the
sources, and the built app's port and stop line."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import types
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.space.deploy import MARKER_NAME, SpaceSettings, app_source
from mmspubench.space.vendor import package_folders
from mmspubench.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
PLANTED = (
    ("mmspubench.space", ".env", "HF_TOKEN=hf_planted_secret_token\n"),
    ("mmspubench.space", ".gradio/flagged/log.csv", "flagged,by,a,visitor\n"),
    ("mmspubench.space", "token.txt", "hf_planted_secret_token\n"),
    ("mmspubench", ".env", "HF_TOKEN=hf_planted_secret_token\n"),
    ("mmspubench.eval", "assets/leftover-run/samples.jsonl", "{}\n"),
    ("mmspubench.eval", "leftover-run/samples.jsonl", "{}\n"),
    ("mmspubench.eval", "leftover-run/results.json", "{}\n"),
    ("mmspubench.eval", "leftover-run/notes.py", "print('a run folder, not a package')\n"),
)
"""Files a user may leave beside the sources: none is package data, none may be shipped."""


@pytest.fixture
def planted() -> Iterator[list[str]]:
    """The files of :data:`PLANTED` in the package folders (removed afterwards); their vendored paths."""
    folders = package_folders()
    made: list[Path] = []
    shipped = []
    try:
        for package, rel, text in PLANTED:
            path = folders[package] / rel
            assert not path.exists(), f"{path} exists already; the test would remove it"
            # the outermost folder (or the file) this test creates: removed afterwards, nothing else
            top = next(p for p in [*reversed(path.parents), path] if not p.exists())
            if top not in made:
                made.append(top)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            shipped.append("/".join([*package.split("."), rel]))
        yield shipped
    finally:
        for top in made:
            if top.is_dir():
                shutil.rmtree(top)
            else:
                top.unlink(missing_ok=True)


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_build_and_push_ship_only_the_wheels_files(
    planted: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "repo"
    assert main(["space", "build", "--out", str(out)]) == 0
    built = _files(out)
    assert not set(planted) & built, sorted(set(planted) & built)
    assert not [f for f in built if "/." in f or (f.startswith(".") and f != MARKER_NAME)]
    assert "mmspubench/eval/assets/tiny-llava-biased/model.safetensors" in built
    assert "mmspubench/integrations/lmms_eval/mm_spubench/mm_spubench.yaml" in built
    capsys.readouterr()
    assert main(["space", "push", "--repo-id", "org/space", "--dry-run"]) == 0
    uploads = {line[4:] for line in capsys.readouterr().out.splitlines() if line.startswith("add ")}
    assert uploads == built - {MARKER_NAME}  # the upload is the build, less the local marker
    # the planted value, in no file at all (the variable's name is legitimately in the sources)
    assert "hf_planted_secret_token" not in "".join(
        (out / f).read_text(errors="replace") for f in built if not f.endswith(".safetensors")
    )


def test_vendored_package_is_exactly_the_wheel(tmp_path: Path) -> None:
    wheel, _ = build_wheel(ROOT, tmp_path / "w")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n for n in archive.namelist() if n.startswith("mmspubench/")}
    out = tmp_path / "repo"
    assert main(["space", "build", "--out", str(out)]) == 0
    vendored = {f for f in _files(out) if f.startswith("mmspubench/")} - {"mmspubench/card/README.md"}
    assert vendored == shipped


def test_wheel_declares_its_data_folders_without_a_setuptools_warning(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    wheel, log = build_wheel(ROOT, tmp_path / "w")
    assert "absent from the `packages` configuration" not in log, log[-3000:]
    assert "Warning" not in log, log[-3000:]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assets = ROOT / "eval" / "assets"
    expected = {
        f"mmspubench/eval/assets/{p.relative_to(assets).as_posix()}" for p in assets.rglob("*") if p.is_file()
    }
    assert len(expected) >= 18 and expected <= names, sorted(expected - names)
    task = ROOT / "mmspubench" / "integrations" / "lmms_eval" / "mm_spubench"
    for name in ("mm_spubench.yaml", "utils.py"):
        assert (task / name).is_file()
        assert f"mmspubench/integrations/lmms_eval/mm_spubench/{name}" in names
    assert not list(ROOT.glob("build")), "the wheel build wrote into the checkout"


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1, out.err[:2000]
    assert len(out.err) < 400
    return out.err


def test_overwrite_replaces_only_an_unchanged_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = tmp_path / "mine"
    user.mkdir()
    (user / "README.md").write_text("my notes\n")
    (user / "app.py").write_text("print('my app')\n")
    assert main(["space", "build", "--out", str(user), "--overwrite"]) == 2
    assert "only a folder space build wrote" in _one_error_line(capsys)
    assert (user / "app.py").read_text() == "print('my app')\n" and _files(user) == {"README.md", "app.py"}
    out = tmp_path / "repo"
    assert main(["space", "build", "--out", str(out)]) == 0
    assert (out / MARKER_NAME).is_file()
    capsys.readouterr()
    assert main(["space", "build", "--out", str(out), "--overwrite", "--dataset", "org/x"]) == 0
    assert "org/x" in (out / "app.py").read_text()
    (out / "mmspubench" / "my-notes.txt").write_text("added by hand\n")
    capsys.readouterr()
    assert main(["space", "build", "--out", str(out), "--overwrite"]) == 2
    assert "mmspubench/my-notes.txt" in _one_error_line(capsys)
    assert (out / "mmspubench" / "my-notes.txt").is_file()
    (out / "mmspubench" / "my-notes.txt").unlink()
    os.symlink(out, tmp_path / "link")  # the build through a link: refused before any work
    assert main(["space", "build", "--out", str(tmp_path / "link"), "--overwrite"]) == 2
    assert "symbolic link" in _one_error_line(capsys)
    (out / MARKER_NAME).write_text("{not json")  # a damaged marker is no marker
    assert main(["space", "build", "--out", str(out), "--overwrite"]) == 2
    _one_error_line(capsys)
    assert (out / "app.py").is_file()


@pytest.mark.parametrize("package", ["mmspubench.space", "mmspubench.eval", "mmspubench"])
def test_out_inside_the_sources_is_one_line(
    package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = package_folders()[package]
    before = sorted(p.name for p in folder.iterdir())
    out = folder / "build-inside"
    assert main(["space", "build", "--out", str(out)]) == 2
    assert "inside the input folder" in _one_error_line(capsys)
    assert sorted(p.name for p in folder.iterdir()) == before
    # the checkout itself (holding the sources) is refused as well, even with --overwrite
    assert main(["space", "build", "--out", str(folder.parent), "--overwrite"]) == 2
    _one_error_line(capsys)


def test_app_source_speaks_of_defaults_only_when_it_has_some() -> None:
    bare = app_source(SpaceSettings())
    assert "defaults below" not in bare and "os.environ" not in bare and "sets none" in bare
    assert "GRADIO_SERVER_PORT" in bare and "SIGTERM" in bare
    with_settings = app_source(SpaceSettings(dataset="org/data"))
    assert "defaults below" in with_settings and "os.environ.setdefault('MMSPUBENCH_DATASET'" in with_settings


class _Demo:
    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def launch(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)

    def close(self) -> None:
        self.calls.append("closed")


def _fake_app(monkeypatch: pytest.MonkeyPatch, calls: list[Any]) -> None:
    from mmspubench.space import layout

    monkeypatch.setattr(layout, "build_app", lambda config: _Demo(calls))
    monkeypatch.setattr(layout.SpaceConfig, "from_env", staticmethod(lambda: types.SimpleNamespace()))


@pytest.mark.parametrize(
    ("env", "port"),
    [({}, 7860), ({"PORT": "8123"}, 8123), ({"PORT": "1", "GRADIO_SERVER_PORT": "9001"}, 9001)],
)
def test_built_app_takes_its_port_and_sigterm_says_so(
    env: dict[str, str], port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.space import app

    for name in ("PORT", "GRADIO_SERVER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    calls: list[Any] = []
    _fake_app(monkeypatch, calls)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        app.main()
    finally:
        timer.cancel()
    assert calls[0]["server_port"] == port and calls[0]["prevent_thread_lock"] is True
    assert calls[-1] == "closed"
    assert capsys.readouterr().err.splitlines()[-1] == "mmspubench space: stopped (SIGTERM)"


@pytest.mark.parametrize("value", ["abc", "0", "70000", "80 80", "٣"])
def test_built_app_refuses_a_bad_port_in_one_line(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.space import app

    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    monkeypatch.setenv("PORT", value)
    calls: list[Any] = []
    _fake_app(monkeypatch, calls)
    with pytest.raises(SystemExit) as stop:
        app.main()
    assert stop.value.code == 2 and calls == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "PORT=" in err and "expected a port number" in err


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow  # about a minute: a build, then the whole app starts
def test_built_app_py_serves_on_port_and_stops_on_sigterm_with_one_line(tmp_path: Path) -> None:
    """``python app.py`` in a built folder, the vendored package only (no .pth of this checkout)."""
    import subprocess
    import sys
    import time
    import urllib.request

    out = tmp_path / "repo"
    assert main(["space", "build", "--out", str(out)]) == 0
    port = _free_port()
    site = [p for p in sys.path if p.endswith("site-packages")]
    code = f"import sys, runpy; sys.path.extend({site!r}); sys.argv = ['app.py']; runpy.run_path('app.py', run_name='__main__')"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMSPUBENCH_", "GRADIO_SERVER"))}
    env.update(
        PORT=str(port), MMSPUBENCH_SPACE_MODELS="", HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False"
    )
    app = subprocess.Popen(
        [sys.executable, "-S", "-c", code],
        cwd=out,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert app.poll() is None, app.communicate()[1][-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the built app did not answer on PORT"
                time.sleep(1)
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
            app.communicate()
    assert app.returncode == 0, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "mmspubench space: stopped (SIGTERM)", err[-3000:]
    assert f"serving on port {port}" in err and "Traceback" not in err
