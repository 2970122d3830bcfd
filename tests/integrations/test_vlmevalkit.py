"""`mmspubench export --format vlmevalkit`: every row read back as VLMEvalKit reads it equals the item."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
from mmspubench.cli import main
from PIL import Image

from tests.dataset_builder import hub_fixtures as hub


def test_tsv_round_trips_every_field_and_image(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    out = tmp_path / "MM_SpuBench.tsv"
    assert main(["export", "--format", "vlmevalkit", "--dataset", hub.REPO_ID, "--out", str(out)]) == 0
    table = pd.read_csv(out, sep="\t", dtype=str, keep_default_na=False)  # VLMEvalKit's reader
    assert list(table.columns) == [
        "index", "image", "question", "hint", "A", "B", "C", "D", "answer", "category", "id"
    ]  # fmt: skip
    items = load_items(load_benchmark(hub.REPO_ID), None, "test")
    assert len(table) == len(items) == hub.N_IMAGES
    for position, (row, item) in enumerate(zip(table.to_dict("records"), items, strict=True)):
        assert row["index"] == str(position) and row["id"] == item.id
        assert row["question"] == item.question and row["hint"] == ""
        assert [row[k] for k in "ABCD"] == list(item.options) and row["answer"] == item.answer
        assert row["category"].split(";") == list(item.spurious_types)
        decoded = Image.open(io.BytesIO(base64.b64decode(row["image"]))).convert("RGB")
        assert np.array_equal(np.asarray(decoded), np.asarray(item.pil_image))


def test_export_refuses_a_path_that_is_not_a_tsv(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.csv"
    assert main(["export", "--format", "vlmevalkit", "--dataset", hub.REPO_ID, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert ".tsv" in err and "\n" not in err and not out.exists()
