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


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A small synthetic twin with counterfactuals and eval's samples under grayscale, noise and one cf."""
    root = tmp_path_factory.mktemp("twin")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMSPUBENCH_CACHE", str(root / "cache"))
        argv = ["synth", "--counterfactuals", "--n", "9", "--image-size", "48", "--out", str(root / "twin")]
        assert main(argv) == 0
        run = root / "run"
        argv = ["eval", "--dataset", str(root / "twin"), "--out", str(run), "--no-progress"]
        names = "grayscale,noise,cf:cue-removed"
        assert main([*argv, "--metrics", "accuracy,interventions", "--interventions", names]) == 0
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    return root, samples


def _export(root: Path, out: Path, *extra: str) -> int:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMSPUBENCH_CACHE", str(root / "cache"))
        argv = ["export", "--format", "vlmevalkit", "--dataset", str(root / "twin"), "--out", str(out)]
        return main([*argv, *extra])


def test_one_tsv_per_intervention_shows_evals_pixels_under_vlmevalkits_reader(
    twin: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.eval.interventions import pixel_digest

    root, samples = twin
    out = tmp_path / "MM_SpuBench.tsv"
    assert _export(root, out, "--interventions", "grayscale,noise,cf:cue-removed") == 0
    printed = capsys.readouterr().out
    files = {
        "grayscale": tmp_path / "MM_SpuBench_grayscale.tsv",
        "noise": tmp_path / "MM_SpuBench_noise.tsv",
        "cf:cue-removed": tmp_path / "MM_SpuBench_cf-cue-removed.tsv",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, *(p.name for p in files.values())])
    assert all(
        f"{path}: the same items under the {name} intervention" in printed for name, path in files.items()
    )
    plain = vlmevalkit_read(out)
    for name, path in files.items():
        table = vlmevalkit_read(path)
        assert table.drop(columns="image").equals(plain.drop(columns="image"))  # same text, same index
        assert (table["image"] != plain["image"]).any()
        for row, sample in zip(table.to_dict("records"), samples, strict=True):
            assert row["item_id"] == f"item:{sample['id']}"
            (answer,) = [a for a in sample["interventions"] if a["name"] == name]
            decoded = Image.open(io.BytesIO(base64.b64decode(row["image"])))
            assert decoded.mode == "RGB" and pixel_digest(decoded) == answer["digest"]  # eval's pixels


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ("cf:*", "give them by name"),
        ("grayscale,grayscale", "grayscale"),
        ("greyscale", "did you mean"),
        ("blur,,noise", "name 2 is empty"),
    ],
)
def test_an_intervention_list_the_export_cannot_write_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], names: str, expected: str
) -> None:
    out = tmp_path / "MM_SpuBench.tsv"
    argv = ["export", "--format", "vlmevalkit", "--dataset", "/nonexistent", "--out", str(out)]
    assert main([*argv, "--interventions", names]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and "\n" not in err and list(tmp_path.iterdir()) == []


def test_a_counterfactual_an_item_lacks_is_refused_and_nothing_is_written(
    twin: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = twin
    capsys.readouterr()
    assert _export(root, tmp_path / "MM_SpuBench.tsv", "--interventions", "grayscale,cf:cue-absent") == 2
    err = [x for x in capsys.readouterr().err.splitlines() if "mmspubench export" in x]
    assert len(err) == 1 and "field 'counterfactuals'" in err[0] and "'cue-absent'" in err[0]
    assert list(tmp_path.iterdir()) == []  # not the plain TSV, not the grayscale one, no temporary


def test_an_intervened_tsv_that_does_not_read_back_leaves_no_file(
    twin: tuple[Path, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmspubench.integrations import vlmevalkit
    from mmspubench.integrations.items import load_split

    root, _ = twin
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(root / "cache"))
    split = load_split(str(root / "twin"))
    real, calls = vlmevalkit.read_back, []

    def second_breaks(text: str) -> Any:  # the plain file reads back, the noise file's images do not
        calls.append(text)
        table = real(text)
        if len(calls) == 2:
            table["image"] = table["image"].str[:-4]
        return table

    monkeypatch.setattr(vlmevalkit, "read_back", second_breaks)
    with pytest.raises(MMSpuBenchError, match="field 'image'"):
        vlmevalkit.write_tsv(split, tmp_path / "MM_SpuBench.tsv", interventions=("noise",))
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_a_text_pandas_reads_as_missing_refuses_the_intervened_export_too(
    split: object, tmp_path: Path
) -> None:
    from mmspubench.integrations.vlmevalkit import write_tsv

    for text in ("None", "NA"):
        edited, item_id = _edited(split, "option", text, rows=1)
        with pytest.raises(MMSpuBenchError, match=f"record {item_id!r}: field 'B'"):
            write_tsv(edited, tmp_path / "x.tsv", interventions=("grayscale", "blur"))  # type: ignore[arg-type]
        assert list(tmp_path.iterdir()) == []


def test_a_circular_export_with_an_intervention_keeps_circular_in_each_name(
    twin: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    root, _ = twin
    out = tmp_path / "MM_SpuBench_Circular.tsv"
    assert _export(root, out, "--circular", "--interventions", "equalize") == 0
    plain, table = vlmevalkit_read(out), vlmevalkit_read(tmp_path / "MM_SpuBench_Circular_equalize.tsv")
    assert len(table) == 4 * 9 and table.drop(columns="image").equals(plain.drop(columns="image"))
    for _, group in table.groupby(table["index"] % 1_000_000):  # VLMEvalKit's grouping: one image per item
        assert group["image"].nunique() == 1
