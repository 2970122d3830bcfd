"""Every user file is read as a regular file under a size limit: no FIFO hangs, no endless read.

Each case is one hostile path handed to a reader; the answer is one error line naming the file,
in well under the test's timeout.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder import files
from mmspubench.dataset_builder.files import (
    MAX_JSON_BYTES,
    MAX_JSONL_BYTES,
    MAX_JSONL_LINE_BYTES,
    iter_lines_bounded,
    open_regular,
    read_bytes_bounded,
    read_text_bounded,
    shown,
)
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval.results import read_finished_samples, read_samples
from mmspubench.guard import run_guarded

RESULTS: dict[str, Any] = {
    "schema_version": 1,
    "benchmark": "MM-SpuBench",
    "model": {"id": "org/model"},
    "accuracy": {"average": 50.0, "overall": 50.0, "by_type": {"BG": 50.0}},
    "cgla": None,
}


def _report_fails(capsys: pytest.CaptureFixture[str], *paths: Path) -> str:
    status = main(["report", *map(str, paths)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("mmspubench report: error: ")
    return lines[0]


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk (a hole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


# report ----------------------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_report_on_a_fifo_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = _fifo(tmp_path / "results.json")
    line = _report_fails(capsys, fifo)
    assert str(fifo) in line and "named pipe (FIFO)" in line


@pytest.mark.timeout(20)
def test_report_on_a_run_folder_whose_results_is_a_fifo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fifo(tmp_path / "run" / "results.json")
    assert "named pipe" in _report_fails(capsys, tmp_path / "run")


@pytest.mark.timeout(20)
def test_report_on_a_symlink_to_dev_zero_reads_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "results.json"
    link.symlink_to("/dev/zero")
    line = _report_fails(capsys, link)
    assert str(link) in line and "character device" in line


def test_report_on_a_results_json_over_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = _sparse(tmp_path / "results.json", MAX_JSON_BYTES + 1)
    line = _report_fails(capsys, big)
    assert str(big) in line and "over the limit of 64 MiB" in line


def test_report_on_a_results_json_that_is_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run" / "results.json").mkdir(parents=True)
    assert "is a directory" in _report_fails(capsys, tmp_path / "run")


def test_report_on_a_symlink_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "results.json"
    loop.symlink_to(tmp_path / "results.json")
    line = _report_fails(capsys, loop)
    assert str(loop) in line and "symbolic links" in line


def test_report_on_an_unreadable_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RESULTS))
    real_open = os.open

    def denied(name: Any, flags: int, *args: Any) -> int:
        if str(name) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(name))
        return real_open(name, flags, *args)

    monkeypatch.setattr(os, "open", denied)
    line = _report_fails(capsys, path)
    assert str(path) in line and "Permission denied" in line


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"benchmark": "MM-SpuBench", "model": {"id": "\xff\xfe"}}', "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"\x00" * 1000, "not valid JSON"),
    ],
    ids=["invalid-utf8", "deeply-nested", "nul-bytes"],
)
def test_report_on_a_malformed_results_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, why: str
) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(content)
    assert why in _report_fails(capsys, path)


def test_report_reads_a_results_json_with_a_utf8_bom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(RESULTS).encode())
    assert main(["report", str(path)]) == 0
    assert "org/model" in capsys.readouterr().out


def test_a_path_with_control_characters_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evil\x1b]0;owned\x07\nname.json"
    path.mkdir()
    line = _report_fails(capsys, path / "results.json")
    assert "\x1b" not in line and "\x07" not in line and "\\x1b" in line


# samples.jsonl -----------------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_samples_jsonl_as_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "samples.jsonl")
    with pytest.raises(MMSpuBenchError, match="named pipe"):
        read_samples(fifo)
    with pytest.raises(MMSpuBenchError, match="named pipe"):
        read_finished_samples(fifo)


def test_samples_jsonl_over_the_total_limit_is_refused_not_read_as_empty(tmp_path: Path) -> None:
    # All NUL bytes, no newline: today's reader would see one partial line and return no samples.
    big = _sparse(tmp_path / "samples.jsonl", MAX_JSONL_BYTES + 1)
    with pytest.raises(MMSpuBenchError, match="over the limit of 256 MiB"):
        read_samples(big)


def test_one_huge_samples_line_is_refused_after_the_line_limit(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b'{"id": "' + b"x" * MAX_JSONL_LINE_BYTES + b'"}\n')
    with pytest.raises(MMSpuBenchError, match=r"line 1: over the limit of 8 MiB a line"):
        read_samples(path)


def test_a_partial_last_line_is_still_dropped(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b'\n{"id": "unfinished')
    assert read_samples(path) == ([], 1)


# the helper itself ------------------------------------------------------------------------


def test_read_bytes_refuses_a_file_that_grows_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    with pytest.raises(MMSpuBenchError, match="over the limit of 4 bytes for thing"):
        read_bytes_bounded(path, 4, "thing")
    assert read_bytes_bounded(path, 5, "thing") == b"12345"


def test_read_text_drops_a_bom_and_refuses_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_bytes(b"\xef\xbb\xbfhello")
    assert read_text_bounded(path, 100, "text") == "hello"
    path.write_bytes(b"ok \xc3(")
    with pytest.raises(MMSpuBenchError, match=r"not UTF-8 text \(byte 0xc3 at offset 3\)"):
        read_text_bounded(path, 100, "text")


def test_iter_lines_counts_and_bounds(tmp_path: Path) -> None:
    path = tmp_path / "l"
    path.write_bytes(b"a\nbb\n\nccc")
    assert list(iter_lines_bounded(path, "x", line_limit=3)) == [
        (1, b"a\n"),
        (2, b"bb\n"),
        (3, b"\n"),
        (4, b"ccc"),
    ]
    with pytest.raises(MMSpuBenchError, match="line 2: over the limit of 2 bytes a line"):
        list(iter_lines_bounded(path, "x", line_limit=2))
    with pytest.raises(MMSpuBenchError, match="over the limit of 6 bytes"):
        list(iter_lines_bounded(path, "x", limit=6))


def test_missing_file_and_odd_names(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match=r"cannot read thing \(No such file or directory"):
        open_regular(tmp_path / "nope", 10, "thing")
    assert shown("a\nb") == "'a\\nb'" and shown("plain/path") == "plain/path"
    assert files.size_text(512 * 2**20) == "512 MiB" and files.size_text(1000) == "1000 bytes"


def test_no_descriptor_leaks_on_refusal(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        with pytest.raises(MMSpuBenchError):
            open_regular(tmp_path / "d", 10, "thing")
    assert len(os.listdir("/proc/self/fd")) == before


# the Space and curate -------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_space_results_folder_holding_a_fifo_is_refused(tmp_path: Path) -> None:
    from mmspubench.space.leaderboard import load_entries

    _fifo(tmp_path / "run" / "results.json")
    with pytest.raises(MMSpuBenchError, match="named pipe"):
        load_entries(tmp_path)


@pytest.mark.timeout(20)
def test_space_upload_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from mmspubench.space.upload_sniff import check_upload

    fifo = _fifo(tmp_path / "upload.png")
    with pytest.raises(MMSpuBenchError, match="named pipe"):
        check_upload(fifo, 5 * 2**20, 10**7)


@pytest.mark.timeout(20)
def test_curate_image_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from mmspubench.curate.sources import open_rgb

    fifo = _fifo(tmp_path / "cat" / "a.png")
    with pytest.raises(MMSpuBenchError, match="named pipe"):
        open_rgb(fifo)


# memory --------------------------------------------------------------------------------------


def test_memory_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    def eat(args: Any) -> int:
        raise MemoryError()

    assert run_guarded("build", eat, None) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == [
        "mmspubench build: error: out of memory (the input is too large for the memory available)"
    ]


def test_a_name_with_a_nul_byte_is_one_line() -> None:
    with pytest.raises(MMSpuBenchError, match=r"'a\\x00b': cannot read thing \(the name holds a NUL byte\)"):
        open_regular("a\x00b", 10, "thing")


def test_curate_candidates_with_one_huge_line_is_refused(tmp_path: Path) -> None:
    from mmspubench.curate.select import read_candidates

    selection = {"parameters": {"source": {"kind": "folder", "path": str(tmp_path)}}}
    (tmp_path / "selection.json").write_text(json.dumps(selection))
    (tmp_path / "candidates.jsonl").write_bytes(b'{"id": "' + b"x" * MAX_JSONL_LINE_BYTES + b'"}\n')
    with pytest.raises(MMSpuBenchError, match=r"candidates\.jsonl: line 1: over the limit of 8 MiB a line"):
        read_candidates(tmp_path)


@pytest.mark.timeout(30)
def test_content_hash_of_a_release_with_a_symlink_to_an_endless_proc_file(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.load import content_hash

    (tmp_path / "annotation.json").write_text("[]")
    (tmp_path / "pagemap").symlink_to("/proc/self/pagemap")  # a regular file of reported size 0
    first = content_hash(tmp_path)
    assert content_hash(tmp_path) == first


@pytest.mark.timeout(30)
def test_content_hash_refuses_a_fifo_in_the_folder(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.load import content_hash

    (tmp_path / "annotation.json").write_text("[]")
    _fifo(tmp_path / "data" / "pipe")
    assert content_hash(tmp_path)  # is_file() skips it: held before, still holds


@pytest.mark.timeout(30)
def test_a_built_folder_whose_parquet_shard_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.load import load_benchmark

    (tmp_path / "README.md").write_text("card")
    _fifo(tmp_path / "data" / "test-00000-of-00001.parquet")
    with pytest.raises(MMSpuBenchError, match="named pipe"):
        load_benchmark(str(tmp_path))
