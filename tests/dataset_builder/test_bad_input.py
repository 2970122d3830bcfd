"""Every bad-input case of the build: non-zero exit, one stderr line naming file/record/field, no output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main

from tests.dataset_builder.raw_fixtures import (
    make_release,
    read_records,
    write_annotation,
    write_png_header_only,
)

Records = list[dict[str, Any]]


def _build_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    out = tmp_path / "out" / "repo"
    status = main(["build", "--source", str(tmp_path / "raw"), "--out", str(out), *extra])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert status != 0
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert lines[0].startswith("mmspubench build: error: ")
    assert not out.exists()
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    return lines[0]


def _mutated(tmp_path: Path, change: Callable[[Records], None]) -> Path:
    raw = make_release(tmp_path / "raw", n=4)
    records = read_records(raw)
    change(records)
    write_annotation(raw, records)
    return raw


def _assert_names(line: str, raw: Path, record_id: str, field: str) -> None:
    assert str(raw / "annotation.json") in line
    assert f"record '{record_id}'" in line
    assert f"field '{field}'" in line


def test_missing_annotation_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    (raw / "annotation.json").unlink()
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and "not found" in line


def test_invalid_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    (raw / "annotation.json").write_text('[{"id": "000000",', encoding="utf-8")
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and "not valid JSON" in line


@pytest.mark.parametrize("top", ['"just text"', "42", "null"])
def test_records_not_list_or_dict(tmp_path: Path, capsys: pytest.CaptureFixture[str], top: str) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    (raw / "annotation.json").write_text(top, encoding="utf-8")
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and "expected a list of records or a dict keyed by id" in line


def test_record_not_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    (raw / "annotation.json").write_text(
        json.dumps([read_records(raw)[0], ["not", "a", "record"]]), encoding="utf-8"
    )
    line = _build_fails(tmp_path, capsys)
    assert "record '#1'" in line and "expected a JSON object" in line


def test_duplicate_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def change(records: Records) -> None:
        records[2]["id"] = records[0]["id"]

    raw = _mutated(tmp_path, change)
    _assert_names(_build_fails(tmp_path, capsys), raw, "000000", "id")


@pytest.mark.parametrize(
    "field",
    [
        "id",
        "question",
        "options",
        "answer",
        "class_name",
        "core_attributes",
        "spurious_attributes",
        "spurious_types",
        "source",
    ],
)
def test_missing_required_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str) -> None:
    def change(records: Records) -> None:
        del records[1][field]

    raw = _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "#1" if field == "id" else "000001", field)
    assert "missing required field" in line


def test_unknown_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def change(records: Records) -> None:
        records[1]["answr"] = "A"

    raw = _mutated(tmp_path, change)
    _assert_names(_build_fails(tmp_path, capsys), raw, "000001", "answr")


@pytest.mark.parametrize("question", ["", "   \n"])
def test_empty_question(tmp_path: Path, capsys: pytest.CaptureFixture[str], question: str) -> None:
    def change(records: Records) -> None:
        records[3]["question"] = question

    raw = _mutated(tmp_path, change)
    _assert_names(_build_fails(tmp_path, capsys), raw, "000003", "question")


@pytest.mark.parametrize("count", [3, 5])
def test_not_four_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int) -> None:
    def change(records: Records) -> None:
        records[0]["options"] = [f"option {k}" for k in range(count)]

    raw = _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000000", "options")
    assert f"{count} options" in line


def test_duplicate_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def change(records: Records) -> None:
        records[0]["options"] = ["A. red mug", "B. blue mug", "C. Red  mug", "D. mug stand"]

    raw = _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000000", "options")
    assert "duplicate" in line


@pytest.mark.parametrize("answer", ["E", "AB", 1, None, "", "A. object 2 option 3", "no such option"])
def test_answer_not_a_to_d(tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: object) -> None:
    def change(records: Records) -> None:
        records[2]["answer"] = answer

    raw = _mutated(tmp_path, change)
    _assert_names(_build_fails(tmp_path, capsys), raw, "000002", "answer")


def test_unknown_spurious_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def change(records: Records) -> None:
        records[1]["spurious_types"] = ["background", "weather"]

    raw = _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000001", "spurious_types")
    assert "'weather'" in line


@pytest.mark.parametrize("types", [[], ["BG", "TN", "CO"]], ids=["none", "three"])
def test_no_type_or_more_than_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], types: list[str]
) -> None:
    def change(records: Records) -> None:
        records[1]["spurious_types"] = types

    raw = _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000001", "spurious_types")
    assert f"{len(types)} types" in line


@pytest.mark.parametrize("field", ["core_attributes", "spurious_attributes"])
@pytest.mark.parametrize(
    "value",
    [[], ["a", "b", "c", "d", "e", "f"], ["ok", 3], ["ok", None], "a single string"],
    ids=["empty", "six", "int", "null", "string"],
)
def test_bad_attribute_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object
) -> None:
    def change(records: Records) -> None:
        records[2][field] = value

    raw = _mutated(tmp_path, change)
    _assert_names(_build_fails(tmp_path, capsys), raw, "000002", field)


def test_missing_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=4)
    (raw / "data" / "images" / "000002.png").unlink()  # named by the record's image field
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000002", "image")
    assert "not found" in line


def test_missing_image_found_by_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=4)
    (raw / "data" / "images" / "000003.png").unlink()  # record 3 has no image field
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000003", "image")


def test_unreadable_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=4)
    (raw / "data" / "images" / "000002.png").write_text("this is not an image", encoding="utf-8")
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000002", "image")
    assert "unreadable or corrupt" in line


@pytest.mark.parametrize("name", ["000000.png", "000001.jpg"])
def test_corrupt_image(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    raw = make_release(tmp_path / "raw", n=4)
    path = raw / "data" / "images" / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated: the header reads, the pixels do not
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, name.split(".")[0], "image")
    assert "unreadable or corrupt" in line


def test_image_of_unsupported_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    raw = make_release(tmp_path / "raw", n=4)
    Image.new("RGB", (8, 8)).save(raw / "data" / "images" / "000002.png", format="GIF")
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000002", "image")
    assert "expected PNG or JPEG" in line


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("C:\\images\\x.png", "absolute"),
        ("data/images/../../secret.png", "'..'"),
        ("https://example.com/x.png", "URL scheme"),
        ("file:data/images/000000.png", "URL scheme"),
    ],
)
def test_unsafe_image_path(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str, why: str) -> None:
    def change(records: Records) -> None:
        records[0]["image"] = path

    raw = _mutated(tmp_path, change)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000000", "image")
    assert why in line


def test_image_symlink_leaving_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=4)
    outside = tmp_path / "outside.png"
    (raw / "data" / "images" / "000000.png").rename(outside)
    (raw / "data" / "images" / "000000.png").symlink_to(outside)
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000000", "image")
    assert "outside the release" in line


def test_decompression_bomb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=4)
    write_png_header_only(
        raw / "data" / "images" / "000002.png", 20_000, 10_000
    )  # 200 Mpx claimed, ~60 bytes
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000002", "image")
    assert "pixel" in line and "limit" in line


def test_pixel_limit_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=4)  # images are 24 x 16 = 384 pixels
    line = _build_fails(tmp_path, capsys, "--max-image-pixels", "383")
    _assert_names(line, raw, "000000", "image")
    assert "over the limit of 383" in line


def test_out_exists_is_refused_without_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_release(tmp_path / "raw", n=2)
    out = tmp_path / "repo"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    status = main(["build", "--source", str(tmp_path / "raw"), "--out", str(out)])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status != 0
    assert len(lines) == 1 and "--overwrite" in lines[0] and str(out) in lines[0]
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw", "repo"]


def test_failed_overwrite_keeps_the_old_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    out = tmp_path / "repo"
    assert main(["build", "--source", str(raw), "--out", str(out)]) == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    (raw / "data" / "images" / "000000.png").write_text("broken", encoding="utf-8")
    assert main(["build", "--source", str(raw), "--out", str(out), "--overwrite"]) != 0
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw", "repo"]
    capsys.readouterr()


def test_no_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    (raw / "annotation.json").write_text("[]", encoding="utf-8")
    line = _build_fails(tmp_path, capsys)
    assert str(raw / "annotation.json") in line and "no records" in line


def test_dict_key_disagreeing_with_the_id_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    data = {"000000": records[0], "000009": records[1]}  # the second keeps "id": "000001"
    (raw / "annotation.json").write_text(json.dumps(data), encoding="utf-8")
    line = _build_fails(tmp_path, capsys)
    _assert_names(line, raw, "000009", "id")
    assert "differs from the record's key" in line
