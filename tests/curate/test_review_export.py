"""Review database, review handlers, agreement statistic and ``curate export``."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import datasets
import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.curate import review_handlers as h
from mmspubench.curate.agreement import krippendorff_alpha
from mmspubench.curate.review_db import add_review, all_reviews, open_db
from mmspubench.errors import MMSpuBenchError

from .alpha_reference import pairwise_alpha
from .fixtures import one_error_line
from .review_form import review_form


@pytest.fixture(scope="module")
def draft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A raw release of 6 synthetic items stands in for a draft (same layout)."""
    out = tmp_path_factory.mktemp("draft") / "draft"
    assert main(["synth", "--out", str(out), "--n", "6", "--seed", "3"]) == 0
    return out


def test_alpha_hand_computed_cases() -> None:
    # Units (1, 2) and (3, 3); pairable values 1, 2, 3, 3 (n = 4).
    # Interval: D_o = (2 * 1^2) / 4 = 0.5; D_e = 2 * (1 + 4 + 4 + 1 + 1 + 0) / (4 * 3) = 22/12 -> alpha = 8/11.
    assert krippendorff_alpha([(1, 2), (3, 3)], "interval") == pytest.approx(8 / 11)
    # Ordinal (n_1 = n_2 = 1, n_3 = 2): delta(1,2) = (2 - 1)^2 = 1, delta(1,3) = (4 - 1.5)^2 = 6.25,
    # delta(2,3) = (3 - 1.5)^2 = 2.25; D_o = 0.5; D_e = 2 * (1 + 2 * 6.25 + 2 * 2.25) / 12 = 3 -> 5/6.
    assert krippendorff_alpha([(1, 2), (3, 3)], "ordinal") == pytest.approx(5 / 6)
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4-coder x 12-unit example.
    units = [(1, 1, 1), (2, 2, 3, 2), (3, 3, 3, 3), (3, 3, 3, 3), (2, 2, 2, 2), (1, 2, 3, 4),
             (4, 4, 4, 4), (1, 1, 2, 1), (2, 2, 2, 2), (5, 5, 5), (1, 1), (3,)]  # fmt: skip
    assert krippendorff_alpha(units, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(units, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha([(4, 4), (4, 4)]) is None and krippendorff_alpha([(1,), (2,)]) is None
    # Systematic disagreement: D_o = (2 * 16 + 2 * 16) / 4 = 16, D_e = 2 * 4 * 16 / 12 = 32/3 -> alpha = -0.5.
    assert krippendorff_alpha([(1, 5), (5, 1)]) == pytest.approx(-0.5)
    # Perfect agreement with variation between items: alpha = 1.
    assert krippendorff_alpha([(1, 1), (5, 5), (3, 3)], "ordinal") == pytest.approx(1.0)


@pytest.mark.parametrize("metric", ["interval", "ordinal"])
@pytest.mark.parametrize("seed", range(6))
def test_alpha_equals_the_pairwise_computation(metric: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    levels = rng.choice([1, 2, 3, 4, 5], size=int(rng.integers(2, 6)), replace=False)
    units = [
        rng.choice(levels, size=int(rng.integers(1, 7))).tolist() for _ in range(int(rng.integers(2, 40)))
    ]
    want = pairwise_alpha(units, metric)
    got = krippendorff_alpha(units, metric)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == pytest.approx(want, abs=1e-12)


def test_the_audit_trail_is_append_only_and_safe_under_concurrent_writers(tmp_path: Path) -> None:
    db = open_db(tmp_path / "r.sqlite", create=True)

    def write(name: str) -> None:
        for i in range(40):
            add_review(db, f"{i:06d}", name, 1 + i % 5, "accept", {}, "")

    threads = [threading.Thread(target=write, args=(f"ann{k}",)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = all_reviews(db)
    assert len(rows) == 120 and [r.seq for r in rows] == sorted({r.seq for r in rows})
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        for sql in ("UPDATE reviews SET rating = 5", "DELETE FROM reviews"):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                conn.execute(sql)
    assert len(all_reviews(open_db(db, create=False))) == 120  # a restart sees everything


def test_edits_are_validated_on_the_spot(draft: Path, tmp_path: Path) -> None:
    d = h.start(draft, tmp_path / "r.sqlite")
    db = tmp_path / "r.sqlite"
    first = h.next_item(d, db, "ann")
    assert first is not None and first == d.records[0].id
    bad = review_form(d, first, spurious_types=["background", "shape", "orientation"])
    with pytest.raises(MMSpuBenchError, match=r"spurious_types.*3 types"):
        h.submit(d, db, "ann", first, "4", "accept", "", bad)
    with pytest.raises(MMSpuBenchError, match="option"):
        h.submit(
            d, db, "ann", first, "4", "accept", "", review_form(d, first, option_B=d.record(first).options[0])
        )
    assert all_reviews(db) == []
    h.submit(d, db, "ann", first, "4", "accept", "typo", review_form(d, first, question="Edited question?"))
    (row,) = all_reviews(db)
    assert row.edits == {"question": "Edited question?"} and row.rating == 4 and row.comment == "typo"
    assert h.next_item(d, db, "ann") == d.records[1].id and h.next_item(d, db, "other") == first
    assert "1 of 6" in h.progress(d, db, "ann")
    image, markdown, fields, _ = h.item_view(d, first)
    assert image == d.record(first).image and image.is_file()
    assert f"Item {first}" in markdown and fields["question"] == d.record(first).question


def test_export_applies_thresholds_and_latest_accepted_edits(draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    ids = [r.id for r in d.records]
    add_review(db, ids[0], "ann1", 5, "accept", {"question": "First edit?"}, "")
    add_review(db, ids[0], "ann2", 4, "accept", {"question": "Second edit?"}, "")
    add_review(db, ids[0], "ann1", 4, "reject", {"question": "Rejected edit?"}, "changed my mind")
    add_review(db, ids[0], "ann3", 5, "accept", {}, "")
    add_review(db, ids[1], "ann1", 2, "accept", {}, "")  # mean 2.5 < 3
    add_review(db, ids[1], "ann2", 3, "accept", {}, "")
    add_review(db, ids[2], "ann1", 5, "reject", {}, "")  # accepted by 1 of 2
    add_review(db, ids[2], "ann2", 5, "accept", {}, "")
    add_review(db, ids[3], "ann1", 5, "accept", {}, "")  # one annotator only
    out = tmp_path / "raw"
    cmd = ["curate", "export", "--draft", str(draft), "--db", str(db), "--min-annotators", "2",
           "--min-mean-rating", "3", "--out", str(out)]  # fmt: skip
    assert main(cmd) == 0
    records = json.loads((out / "annotation.json").read_text())
    assert [r["id"] for r in records] == [ids[0]]
    assert records[0]["question"] == "Second edit?"
    report = json.loads((out / "agreement.json").read_text())
    assert report["items"]["left_out"][ids[1]].startswith("mean rating 2.50")
    assert report["items"]["left_out"][ids[2]] == "accepted by 1 of 2"
    assert report["items"]["left_out"][ids[3]].startswith("1 annotator")
    # Latest per annotator: item0 (4, 4, 5), item1 (2, 3), item2 (5, 5), item3 (5,).
    assert report["ratings"]["n"] == 8
    assert report["krippendorff_alpha"]["interval"] == pytest.approx(
        krippendorff_alpha([(4, 4, 5), (2, 3), (5, 5), (5,)])
    )
    repo = tmp_path / "repo"
    assert main(["build", "--source", str(out), "--out", str(repo)]) == 0
    assert datasets.load_dataset(str(repo), split="test")["question"] == ["Second edit?"]


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, b""])
def test_a_corrupt_or_foreign_database_is_one_line(
    content: bytes, draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "bad.sqlite"
    db.write_bytes(content)
    out = tmp_path / "raw"
    assert main(["curate", "export", "--draft", str(draft), "--db", str(db), "--out", str(out)]) == 2
    err = one_error_line(capsys.readouterr().err)
    assert str(db) in err and "database" in err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["bad.sqlite"]


def test_nothing_meeting_the_thresholds_writes_nothing(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    add_review(db, h.start(draft, db).records[0].id, "ann1", 1, "reject", {}, "")
    out = tmp_path / "raw"
    assert main(["curate", "export", "--draft", str(draft), "--db", str(db), "--out", str(out)]) == 2
    assert "no item meets" in capsys.readouterr().err
    assert not out.exists()


def test_review_refuses_a_corrupt_database_before_serving(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "bad.sqlite"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    assert main(["curate", "review", "--draft", str(draft), "--db", str(db), "--port", "1"]) == 2
    err = one_error_line(capsys.readouterr().err)
    assert str(db) in err
    assert db.read_bytes().startswith(b"SQLite format 3\x00\xff")  # left as it was


def test_the_review_page_wires_every_output(draft: Path, tmp_path: Path) -> None:
    from mmspubench.curate.review_app import _show, build_review_app

    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    app = build_review_app(d, db)
    fns = {fn.api_name: fn for fn in app.fns.values()}
    for name in ("start", "submit"):
        assert len(fns[name].outputs) == len(_show(d, db, "ann", ""))
    for record in d.records:  # the end of the queue fills the same outputs
        add_review(db, record.id, "ann", 3, "accept", {}, "")
    done = _show(d, db, "ann", "")
    assert len(done) == len(fns["start"].outputs) and "All items reviewed" in done[2]


def test_export_never_replaces_its_inputs(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "raw"
    out.mkdir()
    db = out / "r.sqlite"  # the database inside the folder --out would replace
    add_review(db, h.start(draft, db).records[0].id, "ann1", 5, "accept", {}, "")
    args = ["curate", "export", "--draft", str(draft), "--db", str(db), "--overwrite", "--out"]
    assert main([*args, str(out)]) == 2
    assert "--out contains --db" in one_error_line(capsys.readouterr().err)
    assert main([*args, str(draft)]) == 2
    assert "--out is the --draft folder" in one_error_line(capsys.readouterr().err)
    assert len(all_reviews(db)) == 1 and len(h.load_draft(draft).records) > 0
