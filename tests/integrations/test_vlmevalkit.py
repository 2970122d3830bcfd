"""`mmspubench export --format vlmevalkit`: every row read back exactly as VLMEvalKit reads the TSV
(`pd.read_csv(f, sep='\\t')`, pandas' defaults: no friendlier reader), or the export refuses."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError
from PIL import Image

from tests.dataset_builder import hub_fixtures as hub
from tests.dataset_builder.raw_fixtures import make_release, read_records, write_annotation

pd = pytest.importorskip("pandas")


def vlmevalkit_read(path: Path) -> Any:
    """What VLMEvalKit's ``load`` does with a ``.tsv``."""
    return pd.read_csv(path, sep="\t")


def na_words() -> list[str]:
    """pandas' own missing-value words, as this pandas knows them."""
    from pandas._libs.parsers import STR_NA_VALUES

    return sorted(STR_NA_VALUES)


def test_tsv_reads_back_exactly_under_vlmevalkits_reader(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    out = tmp_path / "MM_SpuBench.tsv"
    assert main(["export", "--format", "vlmevalkit", "--dataset", hub.REPO_ID, "--out", str(out)]) == 0
    table = vlmevalkit_read(out)
    assert list(table.columns) == [
        "index",
        "image",
        "question",
        "A",
        "B",
        "C",
        "D",
        "answer",
        "category",
        "item_id",
    ]
    items = load_items(load_benchmark(hub.REPO_ID), None, "test")
    assert len(table) == len(items) == hub.N_IMAGES
    assert any(item.id.isdigit() for item in items)  # ids like 000000: pandas would read them as 0
    for position, (row, item) in enumerate(zip(table.to_dict("records"), items, strict=True)):
        assert isinstance(row["index"], int) and row["index"] == position
        assert row["item_id"] == f"item:{item.id}" and row["item_id"].removeprefix("item:") == item.id
        assert row["question"] == item.question
        assert [row[k] for k in "ABCD"] == list(item.options) and row["answer"] == item.answer
        assert row["category"].split(";") == list(item.spurious_types)
        decoded = Image.open(io.BytesIO(base64.b64decode(row["image"]))).convert("RGB")
        assert np.array_equal(np.asarray(decoded), np.asarray(item.pil_image))


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> object:
    from mmspubench.integrations.items import load_split

    root = tmp_path_factory.mktemp("raw")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMSPUBENCH_CACHE", str(root / "cache"))
        return load_split(str(make_release(root / "release", n=4)))


@pytest.mark.parametrize("field", ["question", "option"])
@pytest.mark.parametrize("text", na_words())
def test_a_text_pandas_reads_as_missing_is_refused_naming_item_and_field(
    split: object, tmp_path: Path, field: str, text: str
) -> None:
    from mmspubench.integrations.vlmevalkit import write_tsv

    edited, item_id = _edited(split, field, text, rows=1)
    out = tmp_path / "x.tsv"
    column = "question" if field == "question" else "B"
    with pytest.raises(MMSpuBenchError) as caught:
        write_tsv(edited, out)  # type: ignore[arg-type]
    message = str(caught.value)
    assert f"record {item_id!r}" in message and f"field {column!r}" in message and "\n" not in message
    assert not out.exists() and list(tmp_path.iterdir()) == []


def _edited(split: object, field: str, text: str, rows: int) -> tuple[object, str]:
    """``split`` with ``text`` as the question (or option B) of its last ``rows`` items."""
    from mmspubench.integrations.items import Split

    assert isinstance(split, Split)
    items = list(split.items)
    for position in range(len(items) - rows, len(items)):
        item = items[position].item
        if field == "question":
            changed = dataclasses.replace(item, question=text)
        else:
            changed = dataclasses.replace(item, options=(item.options[0], text, *item.options[2:]))
        items[position] = dataclasses.replace(items[position], item=changed)
    return dataclasses.replace(split, items=tuple(items)), items[len(items) - rows].item.id


@pytest.mark.parametrize("text", ["True", "false", "007", "1e3", "-0.5"])
def test_a_number_like_text_beside_others_reads_back_and_a_whole_column_of_them_is_refused(
    split: object, tmp_path: Path, text: str
) -> None:
    from mmspubench.integrations.vlmevalkit import write_tsv

    one, _ = _edited(split, "option", text, rows=1)  # one such cell: pandas keeps the column as text
    write_tsv(one, tmp_path / "one.tsv")  # type: ignore[arg-type]
    assert vlmevalkit_read(tmp_path / "one.tsv")["B"].tolist()[-1] == text
    every, first_id = _edited(split, "option", text, rows=4)  # every cell: pandas reads numbers/booleans
    with pytest.raises(MMSpuBenchError, match=f"record {first_id!r}: field 'B'"):
        write_tsv(every, tmp_path / "every.tsv")  # type: ignore[arg-type]
    assert not (tmp_path / "every.tsv").exists()


def test_export_of_a_release_with_an_option_none_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "cache"))
    release = make_release(tmp_path / "release", n=4)
    records = read_records(release)
    records[2]["options"][3] = "None"
    write_annotation(release, records)
    out = tmp_path / "MM_SpuBench.tsv"
    capsys.readouterr()
    assert main(["export", "--format", "vlmevalkit", "--dataset", str(release), "--out", str(out)]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if "mmspubench export" in x]
    assert len(lines) == 1  # (datasets' own progress lines, when it builds the release, aside)
    err = lines[0]
    assert "record '000002'" in err and "field 'D'" in err and "'None'" in err
    assert not out.exists()
    assert json.dumps(records)  # the release itself is untouched by the export


def test_export_refuses_a_path_that_is_not_a_tsv(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.csv"
    assert main(["export", "--format", "vlmevalkit", "--dataset", hub.REPO_ID, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert ".tsv" in err and "\n" not in err and not out.exists()


def test_export_help_gives_an_example_that_sets_lmudata(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = capsys.readouterr().out
    assert "export LMUData=" in text and '--out "$LMUData/MM_SpuBench.tsv"' in text


def test_circular_export_writes_vlmevalkits_circular_copies(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    plain, circular = tmp_path / "MM_SpuBench.tsv", tmp_path / "MM_SpuBench_Circular.tsv"
    base = ["export", "--format", "vlmevalkit", "--dataset", hub.REPO_ID]
    assert main([*base, "--out", str(plain)]) == 0
    assert main([*base, "--circular", "--out", str(circular)]) == 0
    assert "each in its 4 rotations" in capsys.readouterr().out
    table = vlmevalkit_read(circular)
    items = {item.id: item for item in load_items(load_benchmark(hub.REPO_ID), None, "test")}
    assert len(table) == 4 * len(items)
    # VLMEvalKit's originals are the rows with index < 1e6: exactly the plain export.
    main_rows = table[table["index"] < 1_000_000].reset_index(drop=True)
    assert main_rows.equals(vlmevalkit_read(plain))
    for idx, original in main_rows.iterrows():
        group = table[table["index"] % 1_000_000 == original["index"]]  # VLMEvalKit's grouping
        assert sorted(group["index"]) == [int(idx) + k * 1_000_000 for k in range(4)]
        item = items[original["item_id"].removeprefix("item:")]
        for _, copy in group.iterrows():
            k = int(copy["index"]) // 1_000_000
            assert copy["item_id"] == original["item_id"] and copy["image"] == original["image"]
            for j, option in enumerate(item.options):  # published position j shown at (j + k) mod 4
                assert copy["ABCD"[(j + k) % 4]] == option
            assert copy["answer"] == "ABCD"[("ABCD".index(item.answer) + k) % 4]
            assert copy[copy["answer"]] == item.options["ABCD".index(item.answer)]


def test_a_circular_export_not_named_circular_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "MM_SpuBench.tsv"
    argv = ["export", "--format", "vlmevalkit", "--circular", "--dataset", "/nonexistent", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "contains 'circular'" in err and "\n" not in err and not out.exists()


def test_a_circular_copy_that_does_not_read_back_is_refused(
    published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmspubench.integrations import vlmevalkit
    from mmspubench.integrations.items import load_split

    split = load_split(hub.REPO_ID, hub.COMMIT)
    real = vlmevalkit.read_back

    def shifted(text: str) -> Any:  # a reader that drops the rotated copies' offset
        table = real(text)
        table["index"] = table["index"] % 1_000_000
        return table

    monkeypatch.setattr(vlmevalkit, "read_back", shifted)
    out = tmp_path / "MM_SpuBench_Circular.tsv"
    with pytest.raises(MMSpuBenchError, match="field 'index'"):
        vlmevalkit.write_tsv(split, out, circular=True)
    assert not out.exists()
