"""Issue 9, build side: nothing lost, nothing forged. Each test pins one hole a hostile pass found."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder import staging
from mmspubench.dataset_builder.load import content_hash, load_benchmark
from PIL import Image

from tests.dataset_builder.raw_fixtures import make_release, read_records, write_annotation

REPO_ROOT = Path(__file__).parents[2]


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], status: int = 2) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    # Progress bars of `datasets` also go to stderr; the message lines are ours.
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("Generating")]
    assert code == status, err
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _build(raw: Path, out: Path, *extra: str) -> list[str]:
    return ["build", "--source", str(raw), "--out", str(out), *extra]


# 1. repeated JSON keys --------------------------------------------------------------------


def test_a_repeated_key_in_a_record_is_refused_naming_file_record_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=3)
    text = (raw / "annotation.json").read_text()
    records = read_records(raw)
    # Give record 000001 its "answer" twice: json.load would silently keep the second value.
    answer = json.dumps(records[1]["answer"])
    other = json.dumps("ABCD"[("ABCD".index(records[1]["answer"]) + 1) % 4])
    target = f'"answer": {answer}'
    first = text.index('"id": "000001"')
    at = text.index(target, first)
    text = text[:at] + f'"answer": {other}, ' + text[at:]
    (raw / "annotation.json").write_text(text)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "annotation.json" in line and "'000001'" in line and "'answer'" in line and "twice" in line
    assert not (tmp_path / "repo").exists()


def test_a_repeated_id_in_dict_form_is_refused_not_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=3)
    records = read_records(raw)
    body = ", ".join(f'"{r["id"]}": {json.dumps(r)}' for r in records)
    # The same key twice: a dict keeps only the last, so one record would vanish.
    (raw / "annotation.json").write_text("{" + body + f', "000001": {json.dumps(records[1])}' + "}")
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "annotation.json" in line and "'000001'" in line and "twice" in line


# 2. --out never deletes the input ---------------------------------------------------------


@pytest.mark.parametrize("where", ["same", "parent", "inside"])
def test_build_overwrite_never_deletes_its_own_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    raw = make_release(tmp_path / "top" / "raw", n=3)
    before = content_hash(raw)
    out = {"same": raw, "parent": tmp_path / "top", "inside": raw / "data"}[where]
    line = _fails(capsys, _build(raw, out, "--overwrite"))
    assert "--out" in line and "--source" in line
    assert content_hash(raw) == before and (raw / "annotation.json").is_file()


# 5. the content hash covers every image the build uses ---------------------------------------


def test_an_image_under_a_hidden_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    hidden = raw / ".hidden" / "img.png"
    hidden.parent.mkdir()
    Image.new("RGB", (8, 8), "red").save(hidden)
    records[0]["image"] = ".hidden/img.png"
    write_annotation(raw, records)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "'000000'" in line and "'image'" in line and ".hidden" in line


def test_a_symlink_into_a_hidden_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    hidden = raw / ".cache" / "img.png"
    hidden.parent.mkdir()
    Image.new("RGB", (8, 8), "red").save(hidden)
    (raw / "data" / "images" / "link.png").symlink_to(hidden)
    records[0]["image"] = "data/images/link.png"
    write_annotation(raw, records)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "'image'" in line and ".cache" in line


# 6. staging folders: SIGTERM and stale ones -----------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.process
def test_stale_staging_folders_of_dead_runs_are_removed_others_kept(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    parent = tmp_path / "out"
    parent.mkdir()
    dead = parent / f".repo.building-{_dead_pid()}-abc123xy"
    alive = parent / f".repo.building-{os.getpid()}-abc123xy"
    foreign = parent / ".repo.building-notapid"
    user_data = parent / "building-1-abcdefgh"
    for folder in (dead, alive, foreign, user_data):
        (folder / "data").mkdir(parents=True)
    assert main(_build(raw, parent / "repo")) == 0
    assert not dead.exists()
    assert alive.exists() and foreign.exists() and user_data.exists()
    assert staging.stale_staging_folders(parent) == []


SIGTERM_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from mmspubench.dataset_builder import builder

    real = builder._write_shards

    def slow(records, work, repo, options):
        out = real(records, work, repo, options)
        (work / "big.bin").write_bytes(b"x" * 1000)
        print("STAGED", flush=True)
        time.sleep(120)
        return out

    builder._write_shards = slow
    from mmspubench.cli import main
    sys.exit(main(["build", "--source", sys.argv[1], "--out", sys.argv[2]]))
    """
)


@pytest.mark.process
def test_sigterm_removes_the_staging_folder(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    out = tmp_path / "out" / "repo"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_SCRIPT, str(raw), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "STAGED"
    assert [p.name for p in out.parent.iterdir() if ".building-" in p.name]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "terminated" in err
    assert list(out.parent.iterdir()) == []


# 7. bad input and a bad environment: one line, exit 2 ------------------------------------------


def test_an_image_symlink_loop_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    loop = raw / "data" / "images" / "loop.png"
    loop.symlink_to(loop)
    records[0]["image"] = "data/images/loop.png"
    write_annotation(raw, records)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "'000000'" in line and "'image'" in line


@pytest.mark.parametrize(
    "text",
    [
        '[{"id": ' + "9" * 5000 + "}]",  # an integer over Python's digit limit
        "[" * 100_000 + "]" * 100_000,  # nesting deeper than the recursion limit
    ],
    ids=["5000-digit-id", "deep-nesting"],
)
def test_hostile_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    (raw / "annotation.json").write_text(text)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "annotation.json" in line and "not valid JSON" in line


def test_out_under_a_regular_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    (tmp_path / "file").write_text("x")
    line = _fails(capsys, _build(raw, tmp_path / "file" / "repo"))
    assert "repo" in line


def test_out_on_an_unwritable_path_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    locked = tmp_path / "locked"

    def denied(out: Path) -> Path:  # what mkdtemp raises in a folder without write permission
        raise PermissionError(errno.EACCES, "Permission denied", str(out.parent))

    monkeypatch.setattr("mmspubench.dataset_builder.builder.make_staging", denied)
    line = _fails(capsys, _build(raw, locked / "repo"))
    assert "Permission denied" in line and "repo" in line


def _os_error_on(monkeypatch: pytest.MonkeyPatch, method: str, names: set[str], code: int, text: str) -> None:
    """``Path.<method>`` raises ``OSError(code, text)`` for files named in ``names``, works for the rest."""
    real = getattr(Path, method)

    def failing(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name in names:
            raise OSError(code, text, str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, method, failing)


def test_a_read_error_on_annotation_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    real_fdopen = os.fdopen

    class FailingReader:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def read(self, size: int = -1) -> bytes:
            raise OSError(errno.EIO, "Input/output error")

        def __enter__(self) -> FailingReader:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

    def fdopen(fd: int, mode: str = "r", *args: Any) -> Any:
        handle = real_fdopen(fd, mode, *args)
        return FailingReader(handle) if mode == "rb" else handle

    monkeypatch.setattr(os, "fdopen", fdopen)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "annotation.json" in line and "Input/output error" in line


def test_disk_full_while_writing_the_card_is_one_line_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    _os_error_on(
        monkeypatch, "write_text", {"README.md", "eval.yaml"}, errno.ENOSPC, "No space left on device"
    )
    out = tmp_path / "out" / "repo"
    line = _fails(capsys, _build(raw, out))
    assert "No space left on device" in line
    assert list(out.parent.iterdir()) == []


# 8. text that cannot be stored ------------------------------------------------------------------


def test_a_lone_surrogate_is_refused_at_validation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    text = (raw / "annotation.json").read_text()
    text = text.replace('"What is the object', '"\\ud800 What is the object', 1)
    (raw / "annotation.json").write_text(text)
    line = _fails(capsys, _build(raw, tmp_path / "repo"))
    assert "'000000'" in line and "'question'" in line and "surrogate" in line


# 10. a multi-picture JPEG is a JPEG ------------------------------------------------------------


def write_mpo(path: Path) -> None:
    """A two-frame multi-picture JPEG, what phones write (Pillow reads it as format MPO)."""
    rng = np.random.default_rng(0)
    first = Image.fromarray(rng.integers(0, 256, (16, 24, 3), dtype=np.uint8))
    second = Image.new("RGB", (24, 16), "blue")
    path.parent.mkdir(parents=True, exist_ok=True)
    first.save(path, format="MPO", save_all=True, append_images=[second])
    with Image.open(path) as check:
        assert check.format == "MPO" and getattr(check, "n_frames", 1) == 2


def test_a_multi_picture_jpeg_builds_with_its_first_frame(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    write_mpo(raw / "data" / "images" / "phone.jpg")
    records[0]["image"] = "data/images/phone.jpg"
    write_annotation(raw, records)
    assert main(_build(raw, tmp_path / "repo")) == 0
    row = load_benchmark(tmp_path / "repo")[0]
    with Image.open(raw / "data" / "images" / "phone.jpg") as mpo:
        expected = np.asarray(mpo.convert("RGB"))
    assert np.array_equal(np.asarray(row["image"].convert("RGB")), expected)


def test_sigterm_between_the_two_renames_of_a_swap_never_loses_the_old_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    out = tmp_path / "out" / "repo"
    assert main(_build(raw, out)) == 0
    real = os.replace
    calls: list[str] = []

    def replace_then_term(src: object, dst: object) -> None:
        real(src, dst)  # type: ignore[arg-type]
        calls.append(str(dst))
        if len(calls) == 1:  # the old --out was just moved aside: the worst moment to be killed
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr("mmspubench.dataset_builder.folders.os.replace", replace_then_term)
    assert main(_build(raw, out, "--overwrite")) == 143
    assert len(calls) == 2  # both renames ran before the signal was acted on
    assert (out / "README.md").is_file() and list((out / "data").glob("*.parquet"))
    assert [p.name for p in out.parent.iterdir()] == ["repo"]
    capsys.readouterr()
