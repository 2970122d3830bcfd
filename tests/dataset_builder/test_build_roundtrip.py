from __future__ import annotations

import hashlib
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.builder import build_repo
from mmspubench.dataset_builder.schema import FEATURES
from PIL import Image

from tests.dataset_builder.raw_fixtures import CANONICAL_TYPES, make_release, read_records, write_annotation


def _load(repo: Path) -> datasets.Dataset:
    # The user's call, except that the cache is bypassed: datasets keys a local folder's cache on
    # its name and card, and every test here builds a folder named "repo" (see test_load.py).
    ds = datasets.load_dataset(str(repo), split="test", download_mode="force_redownload")
    assert isinstance(ds, datasets.Dataset)
    return ds


@pytest.mark.parametrize("as_dict", [False, True], ids=["list", "dict"])
def test_every_field_of_every_record_round_trips(tmp_path: Path, as_dict: bool) -> None:
    raw = make_release(tmp_path / "raw", n=10)
    records = read_records(raw)
    if as_dict:
        write_annotation(raw, records, as_dict=True)
    assert main(["build", "--source", str(raw), "--out", str(tmp_path / "repo")]) == 0

    ds = _load(tmp_path / "repo")
    assert ds.features == FEATURES
    assert len(ds) == len(records)
    answer, types, source = FEATURES["answer"], FEATURES["spurious_types"].feature, FEATURES["source"]
    for row, rec in zip(ds, records, strict=True):
        assert row["id"] == rec["id"]
        assert row["question"] == rec["question"]
        assert row["options"] == [
            o.split(". ", 1)[1] if o[:3] in {"A. ", "B. ", "C. ", "D. "} else o for o in rec["options"]
        ]
        assert answer.int2str(row["answer"]) == rec["answer"]
        assert row["class_name"] == rec["class_name"]
        assert row["core_attributes"] == rec["core_attributes"]
        assert row["spurious_attributes"] == rec["spurious_attributes"]
        assert [types.int2str(t) for t in row["spurious_types"]] == [
            CANONICAL_TYPES[t] for t in rec["spurious_types"]
        ]
        assert source.int2str(row["source"]) == rec["source"]
        suffix = ".jpg" if int(rec["id"]) % 3 == 1 else ".png"
        src = raw / "data" / "images" / f"{rec['id']}{suffix}"
        image = row["image"]
        assert isinstance(image, Image.Image)
        assert image.format == ("JPEG" if suffix == ".jpg" else "PNG")
        with Image.open(src) as expected:
            np.testing.assert_array_equal(np.asarray(image), np.asarray(expected.convert(image.mode)))


def test_prefixed_options_are_stripped_and_types_canonical(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    records[1]["options"] = ["A. red mug", "B) blue mug", "(C) green mug", "D: mug stand"]
    records[1]["spurious_types"] = "Lighting and Shadows, Sha."
    write_annotation(raw, records)
    build_repo(raw, tmp_path / "repo")
    row = _load(tmp_path / "repo")[1]
    assert row["options"] == ["red mug", "blue mug", "green mug", "mug stand"]
    names = [FEATURES["spurious_types"].feature.int2str(t) for t in row["spurious_types"]]
    assert names == ["lighting_shadows", "shape"]


def _digest(repo: Path) -> dict[str, str]:
    return {
        p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file()
    }


def test_build_is_deterministic(tmp_path: Path) -> None:
    raw_a = make_release(tmp_path / "a" / "raw", n=6)
    raw_b = make_release(tmp_path / "b" / "elsewhere", n=6)
    build_repo(raw_a, tmp_path / "a" / "repo")
    build_repo(raw_b, tmp_path / "b" / "repo")
    digest_a, digest_b = _digest(tmp_path / "a" / "repo"), _digest(tmp_path / "b" / "repo")
    assert digest_a == digest_b
    assert set(digest_a) == {
        "README.md",
        "eval.yaml",
        "data/test-00000-of-00001.parquet",
        "inspect/test-00000-of-00001.parquet",
    }
    table = pq.read_table(tmp_path / "a" / "repo" / "data" / "test-00000-of-00001.parquet")
    assert table.column("id").to_pylist() == [f"{i:06d}" for i in range(6)]


def test_overwrite_replaces_an_existing_build(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=3)
    out = tmp_path / "repo"
    build_repo(raw, out)
    (out / "stale.txt").write_text("old")
    assert main(["build", "--source", str(raw), "--out", str(out), "--overwrite"]) == 0
    assert not (out / "stale.txt").exists()
    assert len(_load(out)) == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_sharding_names_every_shard(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.builder import BuildOptions

    raw = make_release(tmp_path / "raw", n=12)
    build_repo(raw, tmp_path / "repo", options=BuildOptions(max_shard_bytes=1, writer_batch_size=4))
    shards = sorted(p.name for p in (tmp_path / "repo" / "data").iterdir())
    assert len(shards) == 3
    assert shards == [f"test-{i:05d}-of-{len(shards):05d}.parquet" for i in range(len(shards))]
    assert _load(tmp_path / "repo")["id"] == [f"{i:06d}" for i in range(12)]


def test_key_and_value_variants_are_mapped(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    records[0] = {
        "question_id": "000000",
        "Image": "000000.png",  # relative to data/images/
        "Question": "Which object is on the left?",
        "choices": {"B": "blue mug", "A": "red mug", "D": "mug stand", "C": "green mug"},
        "Answer": "(b)",
        "class": "mug",
        "Core Attributes": ["handle"],
        "spurious-attributes": ["kitchen table", "steam"],
        "spurious_type": "Colorization",
        "dataset": "imagenet-sketch",
    }
    write_annotation(raw, records)
    build_repo(raw, tmp_path / "repo")
    row = _load(tmp_path / "repo")[0]
    assert row["id"] == "000000" and row["question"] == "Which object is on the left?"
    assert row["options"] == ["red mug", "blue mug", "green mug", "mug stand"]
    assert FEATURES["answer"].int2str(row["answer"]) == "B"
    assert row["class_name"] == "mug" and row["core_attributes"] == ["handle"]
    assert row["spurious_attributes"] == ["kitchen table", "steam"]
    assert [FEATURES["spurious_types"].feature.int2str(t) for t in row["spurious_types"]] == ["colorization"]
    assert FEATURES["source"].int2str(row["source"]) == "ImageNet-Sketch"


def test_unknown_keys_can_be_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = make_release(tmp_path / "raw", n=2)
    records = read_records(raw)
    records[1]["misclassified_labels"] = ["cup"]
    write_annotation(raw, records)
    args = ["build", "--source", str(raw), "--out", str(tmp_path / "repo")]
    assert main(args) == 2
    assert "misclassified_labels" in capsys.readouterr().err
    assert main([*args, "--unknown-keys", "ignore"]) == 0
    assert "misclassified_labels" not in _load(tmp_path / "repo").column_names


def test_synth_then_build_keeps_every_value(tmp_path: Path) -> None:
    import json

    raw, repo = tmp_path / "raw", tmp_path / "repo"
    assert main(["synth", "--out", str(raw), "--n", "18", "--image-size", "64"]) == 0
    assert main(["build", "--source", str(raw), "--out", str(repo)]) == 0
    ds = _load(repo)
    assert ds.features == FEATURES
    records = json.loads((raw / "annotation.json").read_text(encoding="utf-8"))
    types = FEATURES["spurious_types"].feature
    assert len(ds) == len(records) == 18
    assert {types.int2str(t) for row in ds for t in row["spurious_types"]} == set(types.names)
    for row, rec in zip(ds, records, strict=True):
        assert row["id"] == rec["id"] and row["question"] == rec["question"]
        assert row["class_name"] == rec["class_name"]
        assert row["core_attributes"] == rec["core_attributes"]
        assert row["spurious_attributes"] == rec["spurious_attributes"]
        assert FEATURES["source"].int2str(row["source"]) == "synthetic"
        with Image.open(raw / rec["image"]) as src:
            np.testing.assert_array_equal(
                np.asarray(row["image"]), np.asarray(src.convert(row["image"].mode))
            )


@pytest.mark.parametrize(
    ("answer", "letter"), [("c", "C"), ("(D)", "D"), ("B.", "B"), ("C. Green Mug", "C"), ("mug stand", "D")]
)
def test_answer_forms(tmp_path: Path, answer: str, letter: str) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    records = read_records(raw)
    records[0]["options"] = ["red mug", "blue mug", "green mug", "mug stand"]
    records[0]["answer"] = answer
    write_annotation(raw, records)
    build_repo(raw, tmp_path / "repo")
    assert FEATURES["answer"].int2str(_load(tmp_path / "repo")[0]["answer"]) == letter
