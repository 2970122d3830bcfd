"""``build`` on hostile inputs: an oversized or odd annotation.json, look-alike options, ids with
control or zero-width characters. Each is one error line (no raw control character), exit 2."""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.builder import validate_release
from mmspubench.dataset_builder.files import MAX_ANNOTATION_BYTES

from tests.dataset_builder.raw_fixtures import make_release, read_records, write_annotation

Records = list[dict[str, Any]]


def _build_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "out" / "repo"
    status = main(["build", "--source", str(tmp_path / "raw"), "--out", str(out)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("mmspubench build: error: ")
    assert not any(ch in lines[0] for ch in "\x00\x1b\x07\r\u200b"), lines[0]
    assert not out.exists()
    return lines[0]


def _mutated(tmp_path: Path, change: Callable[[Records], None], *, as_dict: bool = False) -> Path:
    raw = make_release(tmp_path / "raw", n=4)
    records = read_records(raw)
    change(records)
    write_annotation(raw, records, as_dict=as_dict)
    return raw


# 10. size ------------------------------------------------------------------------------------


def test_an_annotation_json_over_the_size_limit_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    with (raw / "annotation.json").open("r+b") as handle:
        handle.truncate(MAX_ANNOTATION_BYTES + 1)  # sparse: costs no disk
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and "over the limit of 256 MiB for annotation.json" in line


def test_the_size_limit_is_far_above_a_real_release(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=40)
    per_record = (raw / "annotation.json").stat().st_size / 40
    assert MAX_ANNOTATION_BYTES / per_record > 100 * 2_400  # over 100 times a 2,400-item release


@pytest.mark.timeout(20)
def test_an_annotation_json_that_is_a_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    (raw / "annotation.json").unlink()
    os.mkfifo(raw / "annotation.json")
    assert "named pipe" in _build_fails(tmp_path, capsys)


@pytest.mark.timeout(20)
def test_an_image_that_is_a_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    image = raw / "data" / "images" / "000000.png"
    image.unlink()
    os.mkfifo(image)
    line = _build_fails(tmp_path, capsys)
    assert "record '000000'" in line and "field 'image'" in line


def test_annotation_json_with_a_bom_builds(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    path = raw / "annotation.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [item.id for item in validate_release(raw)] == ["000000", "000001"]


# 14. look-alike options ---------------------------------------------------------------------

CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (CAFE_NFC, CAFE_NFD),
        ("red mug", "red\u200b mug"),
        ("red mug", "re\u200dd mug"),
        ("red mug", "\ufeffred mug"),
        ("red mug", "ｒｅｄ ｍｕｇ"),
    ],
    ids=["nfc-nfd", "zero-width-space", "zero-width-joiner", "bom", "full-width"],
)
def test_options_equal_after_normalisation_are_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str
) -> None:
    def change(records: Records) -> None:
        records[0]["options"] = [first, second, "blue mug", "mug stand"]

    raw = _mutated(tmp_path, change)
    assert CAFE_NFC != CAFE_NFD
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and "record '000000'" in line and "duplicate options" in line


def test_an_answer_written_in_another_normal_form_still_matches_its_option(tmp_path: Path) -> None:
    def change(records: Records) -> None:
        records[0]["options"] = [CAFE_NFC, "tea", "milk", "water"]
        records[0]["answer"] = CAFE_NFD

    raw = _mutated(tmp_path, change)
    assert validate_release(raw)[0].answer == "A"


# 14. ids -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ("000\x00x", "U+0000"),
        ("000\nx", "U+000A"),
        ("000\rx", "U+000D"),
        ("000\x1b[2Jx", "U+001B"),
        ("000\u200bx", "U+200B"),
        ("000\u202ex", "U+202E"),
        ("000\u2028x", "U+2028"),
    ],
    ids=["nul", "newline", "carriage-return", "escape", "zero-width", "bidi-override", "line-separator"],
)
@pytest.mark.parametrize("as_dict", [False, True], ids=["list", "dict"])
def test_an_id_with_a_control_or_invisible_character_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, code: str, as_dict: bool
) -> None:
    def change(records: Records) -> None:
        records[1]["id"] = bad
        records[1]["image"] = "data/images/000001.jpg"

    _mutated(tmp_path, change, as_dict=as_dict)
    line = _build_fails(tmp_path, capsys)
    assert code in line and "field 'id'" in line and repr(bad) in line


def test_ids_equal_after_normalisation_are_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(records: Records) -> None:
        records[0]["id"], records[1]["id"] = f"{CAFE_NFC}-1", f"{CAFE_NFD}-1"
        records[1]["image"] = "data/images/000001.jpg"

    _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    assert "duplicate id" in line and "normalisation" in line


def test_a_release_path_with_control_characters_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw\x1b]0;x\x07"
    make_release(raw, n=1)
    records = read_records(raw)
    records[0]["answer"] = "Z"
    (raw / "annotation.json").write_text(json.dumps(records))
    status = main(["build", "--source", str(raw), "--out", str(tmp_path / "repo")])
    err = capsys.readouterr().err
    assert status == 2 and "\x1b" not in err and "\x07" not in err and "\\x1b" in err, err


def _loop(path: Path) -> None:
    path.symlink_to(path)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: p.mkdir(), "is a directory; expected annotation.json as a regular file"),
        (_loop, "cannot read annotation.json (Too many levels of symbolic links)"),
        (lambda p: p.symlink_to("/dev/zero"), "is a character device"),
        (lambda p: p.write_bytes(b'[{"id": "\xff"}]'), "not valid JSON"),
        (lambda p: p.write_bytes(b"[" * 50_000 + b"]" * 50_000), "nested too deeply"),
        (lambda p: p.write_bytes(b'[{"id": 1' + b"0" * 5000 + b"}]"), "not valid JSON"),
    ],
    ids=["directory", "symlink-loop", "dev-zero", "invalid-utf8", "deeply-nested", "huge-integer"],
)
@pytest.mark.timeout(60)
def test_an_odd_annotation_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], None], why: str
) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    (raw / "annotation.json").unlink()
    make(raw / "annotation.json")
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and why in line


def test_an_image_over_the_byte_limit_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.files import MAX_IMAGE_BYTES

    raw = make_release(tmp_path / "raw", n=1)
    with (raw / "data" / "images" / "000000.png").open("r+b") as handle:
        handle.truncate(MAX_IMAGE_BYTES + 1)  # a valid PNG head, then a sparse tail
    line = _build_fails(tmp_path, capsys)
    assert "record '000000'" in line and "over the limit of 256 MiB for an image" in line


def test_an_image_name_with_control_characters_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    odd = raw / "data" / "images" / "x\x1b[2J.png"
    odd.write_bytes(b"not an image")
    records = read_records(raw)
    records[0]["image"] = "data/images/x\x1b[2J.png"
    write_annotation(raw, records)
    line = _build_fails(tmp_path, capsys)
    assert "unreadable or corrupt image" in line and "\\x1b[2J" in line


@pytest.mark.parametrize("key", ["question\u200b", "ques\x00tion", "question\x1b[2J"])
def test_an_unknown_key_with_invisible_characters_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    def change(records: Records) -> None:
        records[0][key] = records[0].pop("question")

    _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    assert "unknown key" in line and repr(key) in line


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("question", "Which object is this?\x1b]0;owned\x07"),
        ("class_name", "cat\x1b[2J"),
        ("core_attributes", ["whiskers", "tail\r"]),
        ("options", ["cat\x00", "dog", "car", "cup"]),
    ],
)
def test_a_text_with_control_characters_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    def change(records: Records) -> None:
        records[0][field] = value
        if field in ("options", "class_name"):
            records[0]["answer"] = "A"

    _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    assert "record '000000'" in line and f"field '{field}'" in line and "control character" in line


def test_line_breaks_and_tabs_in_a_question_are_kept(tmp_path: Path) -> None:
    def change(records: Records) -> None:
        records[0]["question"] = "Look at the picture.\nWhich object\tis it?"

    raw = _mutated(tmp_path, change)
    assert validate_release(raw)[0].question == "Look at the picture.\nWhich object\tis it?"
