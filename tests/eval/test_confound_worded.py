"""The text-prior control item by item (bench/confound_worded.py), on hand-made releases and samples."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "confound_worded.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("confound_worded", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cw = load_script()


def item(i: int, worded: bool) -> dict[str, Any]:
    question = "What is at the top?" + (" Its label reads: kite." if worded else "")
    return {
        "id": f"{i:03d}",
        "question": question,
        "options": ["kite", "boat", "car", "teapot"],
        "answer": "A",
        "class_name": "kite",
        "spurious_types": ["background"],
    }


def record(i: int, correct: bool, raw: str, blind_correct: bool, blind_raw: str) -> dict[str, Any]:
    return {
        "id": f"{i:03d}",
        "correct": correct,
        "raw_output": raw,
        "prediction": "A" if correct else "B",
        "blind": {"correct": blind_correct, "raw_output": blind_raw, "prediction": None},
    }


def test_worded_items_are_those_whose_question_differs_and_the_releases_must_match() -> None:
    prior = [item(0, True), item(1, False), item(2, True)]
    balanced = [item(0, False), item(1, False), item(2, False)]
    assert cw.worded_ids(prior, balanced) == ["000", "002"]
    forged = [dict(balanced[0], answer="B"), *balanced[1:]]
    with pytest.raises(ValueError, match=r"item '000': field 'answer' differs"):
        cw.worded_ids(prior, forged)
    with pytest.raises(ValueError, match="different item ids"):
        cw.worded_ids(prior, balanced[:2])


def test_paired_counts_and_mcnemar_by_hand() -> None:
    # Five worded items. With the image: worded right on 0-3, unworded right on 0 only: 4 vs 1,
    # discordant 3 (worded only) vs 0, exact McNemar p = 2 * 0.5**3 = 0.25. Raw answers changed:
    # items 1, 2, 3 ("kite" vs "boat"); item 4 is wrong both times with the same answer.
    ids = [f"{i:03d}" for i in range(5)]
    worded = {f"{i:03d}": record(i, i < 4, "kite" if i < 4 else "car", i == 0, "boat") for i in range(5)}
    unworded = {
        f"{i:03d}": record(i, i == 0, "kite" if i == 0 else ("boat" if i < 4 else "car"), i == 0, "boat")
        for i in range(5)
    }
    row = cw.paired(ids, worded, unworded, "with image")
    assert row == {"view": "with image", "n": 5, "worded": 4, "unworded": 1, "p": 0.25, "changed": 3}
    blind = cw.paired(ids, worded, unworded, "blind")
    assert blind == {"view": "blind", "n": 5, "worded": 1, "unworded": 1, "p": 1.0, "changed": 0}
    # logprob mode records no raw text: a changed prediction alone counts as a changed answer
    lp_worded = {i: dict(r, raw_output=None) for i, r in worded.items()}
    lp_unworded = {i: dict(r, raw_output=None) for i, r in unworded.items()}
    assert cw.paired(ids, lp_worded, lp_unworded, "with image")["changed"] == 3  # items 1-3: A vs B
    del worded["000"]["blind"]
    with pytest.raises(ValueError, match=r"record '000': no blind answer"):
        cw.paired(ids, worded, unworded, "blind")


def test_rows_from_run_folders_and_the_table(tmp_path: Path) -> None:
    releases = tmp_path / "releases"
    for name, worded in (("prior", True), ("balanced", False)):
        (releases / name).mkdir(parents=True)
        items = [item(0, worded), item(1, False)]
        (releases / name / "annotation.json").write_text(json.dumps(items), encoding="utf-8")
    for release, correct in (("prior", True), ("balanced", False)):
        run = tmp_path / "runs" / f"prior-text-prior-{release}-generate"
        run.mkdir(parents=True)
        lines = [
            record(0, correct, "kite" if correct else "boat", False, "car"),
            record(1, False, "x", False, "y"),
        ]
        (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    rows = cw.worded_rows(tmp_path)  # only the model and mode with both runs
    assert [(r["model"], r["mode"], r["view"]) for r in rows] == [
        ("text-prior", "generate", "with image"),
        ("text-prior", "generate", "blind"),
    ]
    table = cw.worded_table(rows).splitlines()
    assert table[2] == "| text-prior | generate | with image | 1 | 1 (100.0 %) | 0 (0.0 %) | 1 | 1 |"
    assert table[3] == "| text-prior | generate | blind | 1 | 0 (0.0 %) | 0 (0.0 %) | 1 | 0 |"


def test_fit_rows_split_the_training_items_by_wording() -> None:
    samples = {
        "000": record(0, True, "kite", True, "kite"),
        "001": record(1, False, "boat", False, "boat"),
        "002": record(2, True, "kite", False, "boat"),
    }
    samples["001"]["prediction"] = None
    rows = cw.fit_rows(samples, {"000", "002"})
    assert rows == [
        {"items": "worded", "view": "with image", "n": 2, "correct": 2, "unparsed": 0},
        {"items": "worded", "view": "blind", "n": 2, "correct": 1, "unparsed": 2},
        {"items": "not worded", "view": "with image", "n": 1, "correct": 0, "unparsed": 1},
        {"items": "not worded", "view": "blind", "n": 1, "correct": 0, "unparsed": 1},
    ]
    assert cw.fit_table(rows).splitlines()[2] == "| worded | with image | 2 | 2 (100.0 %) | 0 |"


def test_a_repeated_sample_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"id": "000"}\n{"id": "000"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2: id '000' seen twice"):
        cw.read_jsonl(path)
