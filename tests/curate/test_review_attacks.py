"""The review database and app under hostile input: names, forged rows, another draft's database,
markup in names and drafts, ratings and texts out of bounds, a draft changed between review and export."""

from __future__ import annotations

import json
import random
import sqlite3
import string
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from mmspubench.cli import main
from mmspubench.curate import review_handlers as h
from mmspubench.curate.names import MAX_NAME, name_key, normalise_name
from mmspubench.curate.review_db import add_review, all_reviews
from mmspubench.errors import MMSpuBenchError
from mmspubench.markup import escape_markdown

from .fixtures import one_error_line
from .review_form import review_form

HOSTILE = [
    "[click me](https://evil.example/x)",
    "![pixel](https://evil.example/p.png)",
    '<img src="https://evil.example/i.png">',
    "<a href=https://evil.example>x</a>",
    "https://evil.example/autolink www.evil.example me@evil.example",
    "<https://evil.example>",
    "**bold** _it_ `code` # h ~~s~~ | t | &amp; &#60;img&#62; \\<img>",
]
"""Texts that would render as a link, an image, HTML or formatting if placed raw."""

RENDER = MarkdownIt("commonmark", {"html": True})
"""CommonMark with raw HTML on, as Gradio's Markdown renders it."""


def _synth(tmp_path: Path, name: str, seed: int) -> Path:
    out = tmp_path / name
    assert main(["synth", "--out", str(out), "--n", "4", "--seed", str(seed)]) == 0
    return out


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    return _synth(tmp_path, "draft", 3)


def _export(draft: Path, db: Path, out: Path, *extra: str) -> int:
    return main(["curate", "export", "--draft", str(draft), "--db", str(db), "--out", str(out), *extra])


# --- item 7: one person, one annotator ------------------------------------------------------------


def test_names_differing_in_case_width_or_invisibles_are_one_annotator(draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    first = d.records[0].id
    for name in ("alice", "alice\u200b", "ALICE", "\uff41\uff4c\uff49\uff43\uff45", " a\u00adlice\u202e\t"):
        h.submit(d, db, name, first, "5", "accept", "", review_form(d, first))
    assert {r.annotator for r in all_reviews(db)} <= {"alice", "ALICE"}
    assert h.next_item(d, db, "Alice\u200d") == d.records[1].id
    assert "all annotators: alice: 1" in h.progress(d, db, "alice")
    out = tmp_path / "raw"
    assert _export(draft, db, out, "--min-annotators", "2") == 2  # one annotator, not five
    assert _export(draft, db, out, "--min-annotators", "1") == 0
    report = json.loads((out / "agreement.json").read_text())
    assert report["annotators"] == ["alice"] and report["ratings"]["n"] == 1


@pytest.mark.parametrize("name", ["x" * 10_000, "y" * (MAX_NAME + 1), "\u200b" * 10_000])
def test_an_over_long_name_is_refused_on_the_server(name: str, draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    first = d.records[0].id
    with pytest.raises(MMSpuBenchError, match=f"at most {MAX_NAME}"):
        h.submit(d, db, name, first, "4", "accept", "", review_form(d, first))
    with pytest.raises(MMSpuBenchError, match=f"at most {MAX_NAME}"):
        add_review(db, first, name, 4, "accept", {}, "")
    assert all_reviews(db) == []
    assert normalise_name("z" * MAX_NAME) == "z" * MAX_NAME


@pytest.mark.parametrize("name", ["", "   ", "\u200b\u200c\ufeff", "\x00\x1b\x07\x7f", None, 7])
def test_an_empty_or_invisible_name_is_refused(name: Any, draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    with pytest.raises(MMSpuBenchError, match="name"):
        h.submit(d, db, name, d.records[0].id, "4", "accept", "", review_form(d, d.records[0].id))
    assert all_reviews(db) == []


def test_control_characters_never_reach_a_stored_name() -> None:
    assert normalise_name("bob\x1b]0;owned\x07") == "bob]0;owned"
    assert name_key("Stra\u00dfe") == name_key("STRASSE")


# --- item 6: a database belongs to one draft ------------------------------------------------------


def test_another_drafts_database_is_refused_by_export_and_review(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _synth(tmp_path, "other", 4)
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    for record in d.records:
        add_review(db, record.id, "ann", 5, "accept", {"question": "Edited?"}, "")
    capsys.readouterr()
    out = tmp_path / "raw"
    assert _export(other, db, out) == 2
    err = one_error_line(capsys.readouterr().err)
    assert str(draft) in err and str(other) in err and "not of --draft" in err
    assert not out.exists()
    assert main(["curate", "review", "--draft", str(other), "--db", str(db), "--port", "1"]) == 2
    assert "not of --draft" in one_error_line(capsys.readouterr().err)
    assert _export(draft, db, out) == 0  # its own draft still exports


def test_a_draft_changed_after_review_is_refused(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    add_review(db, d.records[0].id, "ann", 5, "accept", {}, "")
    records = json.loads((draft / "annotation.json").read_text())
    records[0]["question"] = "A different question?"
    (draft / "annotation.json").write_text(json.dumps(records))
    capsys.readouterr()
    assert _export(draft, db, tmp_path / "raw") == 2
    assert "not of --draft" in one_error_line(capsys.readouterr().err)


def test_a_database_without_a_recorded_draft_is_refused(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.curate.review_db import open_db

    db = open_db(tmp_path / "r.sqlite", create=True)  # never opened by `curate review`
    add_review(db, h.load_draft(draft).records[0].id, "ann", 5, "accept", {}, "")
    capsys.readouterr()
    assert _export(draft, db, tmp_path / "raw") == 2
    assert "no recorded draft" in one_error_line(capsys.readouterr().err)
    assert main(["curate", "review", "--draft", str(draft), "--db", str(db), "--port", "1"]) == 2
    assert "no recorded draft" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "sql", ["UPDATE meta SET value = 'forged' WHERE key = 'draft_digest'", "DELETE FROM meta"]
)
def test_the_recorded_draft_cannot_be_changed(sql: str, draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    h.start(draft, db)
    conn = sqlite3.connect(db)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="cannot be changed"):
            conn.execute(sql)
    finally:
        conn.close()


@pytest.mark.parametrize(
    "run", ['{"draft_id": "../../x"}', '{"draft_id": 7}', "[", '{"draft_id": "' + "a" * 65 + '"}']
)
def test_a_forged_draft_id_is_one_line(
    run: str, draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (draft / "annotate.json").write_text(run)
    assert (
        main(["curate", "review", "--draft", str(draft), "--db", str(tmp_path / "r.sqlite"), "--port", "1"])
        == 2
    )
    assert "annotate.json" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "r.sqlite").exists()


def test_two_drafts_racing_for_one_new_database_cannot_both_bind_it(draft: Path, tmp_path: Path) -> None:
    import threading

    other = _synth(tmp_path, "other", 4)
    # Many rounds: SQLite answers "database is locked" at once (no busy wait) in a rare interleaving
    # (a check while another server turns the new file into WAL), which one round seldom meets.
    for round_ in range(30):
        db = tmp_path / f"r{round_}.sqlite"
        errors: list[str] = []

        def start(folder: Path, db: Path = db, errors: list[str] = errors) -> None:
            try:
                h.start(folder, db)
            except MMSpuBenchError as err:
                errors.append(str(err))

        threads = [threading.Thread(target=start, args=(f,)) for f in (draft, other, draft, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 2 and all("not of --draft" in e for e in errors), (round_, errors)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_a_database_that_is_not_a_regular_file_is_one_line(
    kind: str, draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    db = tmp_path / "r.sqlite"
    {"fifo": lambda: os.mkfifo(db), "dev-zero": lambda: db.symlink_to("/dev/zero"), "folder": db.mkdir}[
        kind
    ]()
    for step in (["review", "--draft", str(draft), "--db", str(db), "--port", "1"],
                 ["export", "--draft", str(draft), "--db", str(db), "--out", str(tmp_path / "raw")]):  # fmt: skip
        assert main(["curate", *step]) == 2
        assert "not a regular file" in one_error_line(capsys.readouterr().err)


# --- item 8: nothing from a draft or a person renders as markup -----------------------------------


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_literally(text: str) -> None:
    html = RENDER.render(escape_markdown(text))
    assert "<a" not in html and "<img" not in html and "<strong" not in html and "<code" not in html
    assert RENDER.render(f"x {escape_markdown(text)}") == RENDER.render("x " + _entities(text))


def _entities(text: str) -> str:
    """The text as HTML entities: the Markdown that renders it literally, independently built."""
    return "".join(f"&#{ord(c)};" if c in string.punctuation else c for c in text)


def test_random_punctuation_renders_literally() -> None:
    rng = random.Random(0)
    alphabet = string.punctuation + "ab 1"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))).strip() or "a"
        assert RENDER.render(f"x {escape_markdown(text)}") == RENDER.render(f"x {_entities(text)}"), text


def test_one_annotators_markup_is_shown_to_the_others_as_text(draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    first = d.records[0].id
    for name in HOSTILE[:4]:
        add_review(db, first, name, 4, "accept", {}, "")
    html = RENDER.render(h.progress(d, db, "bob"))
    assert "<a" not in html and "<img" not in html and "evil.example" in html


def test_a_drafts_markup_is_shown_as_text(tmp_path: Path) -> None:
    draft = _synth(tmp_path, "draft", 3)
    records = json.loads((draft / "annotation.json").read_text())
    records[0]["question"] = HOSTILE[1] + " " + HOSTILE[2]
    records[0]["core_attributes"] = [HOSTILE[0]]
    records[0]["spurious_attributes"] = [HOSTILE[3]]
    (draft / "annotation.json").write_text(json.dumps(records))
    d = h.load_draft(draft)
    html = RENDER.render(h.item_view(d, d.records[0].id)[1])
    assert "<a" not in html and "<img" not in html and "evil.example/p.png" in html


def test_error_messages_are_html_escaped(draft: Path, tmp_path: Path) -> None:
    import gradio as gr
    from mmspubench.curate.review_app import build_review_app

    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    send = next(fn for fn in build_review_app(d, db).fns.values() if fn.api_name == "submit").fn
    assert send is not None
    first = d.records[0].id
    form = review_form(d, first, spurious_types=['<img src="https://evil.example/e.png">'])
    order = ["question", "option_A", "option_B", "option_C", "option_D", "answer", "class_name",
             "core_attributes", "spurious_attributes", "spurious_types"]  # fmt: skip
    with pytest.raises(gr.Error) as caught:
        send("ann", first, "4", "accept", "", *(form[name] for name in order))
    assert "<img" not in str(caught.value.message) and "&lt;img" in str(caught.value.message)


# --- forged rows, out-of-range values, texts without bound ----------------------------------------


def _forge(db: Path, sql: str, values: tuple[Any, ...] = ()) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, values)
        conn.commit()


UNCHECKED = """CREATE TABLE reviews (seq INTEGER PRIMARY KEY AUTOINCREMENT, item_id, annotator, rating,
    decision, edits, comment, created_at)"""


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("rating", 3.5, "rating 3.5"),
        ("rating", 10**15, "rating 1000000000000000"),
        ("rating", "abc", "rating 'abc'"),
        ("rating", None, "rating None"),
        ("decision", "ACCEPT", "decision 'ACCEPT'"),
        ("annotator", "x" * 10_000, "field 'annotator'"),
        ("annotator", "\u200b", "field 'annotator'"),
        ("edits", "[1]", "not a JSON object"),
        ("edits", 5, "edits 5"),
        ("item_id", 3, "item id 3"),
        ("comment", b"\x00bytes", "comment"),
    ],
)
def test_a_forged_row_is_one_line(
    column: str, value: Any, message: str, draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    _forge(db, "DROP TABLE reviews")  # the triggers refuse UPDATE and DELETE, not DROP
    _forge(db, UNCHECKED)
    row = {"item_id": d.records[0].id, "annotator": "ann", "rating": 5, "decision": "accept",
           "edits": "{}", "comment": "", "created_at": "2026-01-01T00:00:00+00:00", column: value}  # fmt: skip
    _forge(
        db,
        f"INSERT INTO reviews ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    capsys.readouterr()
    out = tmp_path / "raw"
    assert _export(draft, db, out) == 2
    err = one_error_line(capsys.readouterr().err)
    assert f"{db}: review 1: " in err and message in err
    assert not out.exists()


@pytest.mark.parametrize("rating", ["4.7", "abc", 4.7, True, "99999999999999999999", 0, "6", [4]])
def test_a_rating_out_of_range_through_the_api_is_refused(rating: Any, draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    first = d.records[0].id
    with pytest.raises(MMSpuBenchError, match="rating"):
        h.submit(d, db, "ann", first, rating, "accept", "", review_form(d, first))
    assert all_reviews(db) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"question": "Q" * 1001 + "?"}, "at most 1000"),
        ({"core_attributes": "ok\n" + "a" * 1001}, "at most 1000"),
        ({"question": ["a list"]}, "expected a text"),
        ({"spurious_types": "background"}, "spurious_types"),
        ({"spurious_types": ["background", "not-a-type"]}, "spurious_types"),
        ({"answer": 3}, "expected a text"),
    ],
)
def test_an_edit_out_of_bounds_is_refused(
    changes: dict[str, Any], message: str, draft: Path, tmp_path: Path
) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    first = d.records[0].id
    with pytest.raises(MMSpuBenchError, match=message):
        h.submit(d, db, "ann", first, "3", "accept", "", review_form(d, first, **changes))
    with pytest.raises(MMSpuBenchError, match="comment"):
        h.submit(d, db, "ann", first, "3", "accept", "c" * 10_000, review_form(d, first))
    assert all_reviews(db) == []


def test_sql_in_a_name_or_comment_is_stored_as_text(draft: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    first = d.records[0].id
    name = "Robert'); DROP TABLE reviews;--"
    h.submit(d, db, name, first, "4", "accept", "'; DELETE FROM reviews; --", review_form(d, first))
    (row,) = all_reviews(db)
    assert row.annotator == name and row.comment.startswith("';")
    assert _export(draft, db, tmp_path / "raw") == 0


def test_a_draft_image_deleted_between_review_and_export_is_one_line(
    draft: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    d = h.start(draft, db)
    add_review(db, d.records[1].id, "ann", 5, "accept", {}, "")
    Path(str(d.records[0].image)).unlink()
    capsys.readouterr()
    out = tmp_path / "raw"
    assert _export(draft, db, out) == 2
    assert "000000" in one_error_line(capsys.readouterr().err)
    assert not out.exists()
