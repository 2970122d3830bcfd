"""``curate select`` and ``annotate`` against bad images and answers that break the schema's bounds.

Select checks each image's real format by the rule annotate and build apply; annotate fails a bad
candidate alone (recorded, counted, printed) and holds every answer to the schema it sent.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.curate import annotate as annotate_mod
from mmspubench.dataset_builder.builder import validate_release
from PIL import Image

from .fixtures import VALID, make_class_tree, make_picture, one_error_line, select_argv
from .test_annotate import ScriptedAnnotator


@pytest.fixture(scope="module")
def selected(tiny_clip: Path, image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A selection (k=3, l=5) of the session's 8 x 6 picture tree."""
    out = tmp_path_factory.mktemp("robust") / "cand"
    assert main(select_argv(image_tree, tiny_clip, out, "--k", "3", "--l", "5")) == 0
    return out


def _private(selected: Path, image_tree: Path, tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """A copy of the tree and of the selection pointing at it: ``(tree, cand, candidate lines)``."""
    tree = Path(shutil.copytree(image_tree, tmp_path / "tree"))
    cand = Path(shutil.copytree(selected, tmp_path / "cand"))
    selection = json.loads((cand / "selection.json").read_text())
    selection["parameters"]["source"]["path"] = str(tree.resolve())
    (cand / "selection.json").write_text(json.dumps(selection))
    lines = [json.loads(x) for x in (cand / "candidates.jsonl").read_text().splitlines()]
    return tree, cand, lines


def _scripted(monkeypatch: pytest.MonkeyPatch, script: dict[int, list[str]]) -> ScriptedAnnotator:
    fake = ScriptedAnnotator(script)
    monkeypatch.setattr(annotate_mod, "open_annotator", lambda *a, **k: fake)
    return fake


def _annotate(cand: Path, out: Path) -> int:
    argv = ["curate", "annotate", "--candidates", str(cand), "--backend", "transformers", "--model", "x"]
    return main([*argv, "--out", str(out)])


def _provenance(draft: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (draft / "provenance.jsonl").read_text().splitlines()]


def test_select_refuses_a_gif_named_png(
    tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_class_tree(tmp_path / "imgs", 3, ("apple", "bicycle", "candle", "dolphin"))
    make_picture(99).save(root / "bicycle" / "0001.png", format="GIF")
    assert main(select_argv(root, tiny_clip, tmp_path / "cand", "--k", "1", "--l", "3")) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "bicycle/0001.png: a GIF image" in err and "PNG, JPEG" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imgs"]


@pytest.mark.timeout(60)
def test_select_refuses_a_fifo_instead_of_hanging(
    tiny_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_class_tree(tmp_path / "imgs", 2, ("apple", "bicycle"))
    os.mkfifo(root / "apple" / "0009.png")
    assert main(select_argv(root, tiny_clip, tmp_path / "cand", "--k", "0", "--l", "1")) == 2
    assert "0009.png: not a regular file" in one_error_line(capsys.readouterr().err)


def test_a_bad_candidate_image_fails_alone(
    selected: Path,
    image_tree: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree, cand, lines = _private(selected, image_tree, tmp_path)
    assert len(lines) >= 4
    make_picture(7).save(tree / lines[0]["image"], format="GIF")  # changed after select
    (tree / lines[1]["image"]).write_bytes(b"no longer an image")
    real_save = annotate_mod._save_image

    def save_then_spoil(source: Any, ref: str | int, target: Path) -> None:
        real_save(source, ref, target)
        if ref == lines[2]["image"]:  # the copy in the draft turns out unreadable
            target.write_bytes(b"GIF89a truncated")

    monkeypatch.setattr(annotate_mod, "_save_image", save_then_spoil)
    fake = _scripted(monkeypatch, {})
    draft = tmp_path / "draft"
    assert _annotate(cand, draft) == 0
    out = capsys.readouterr().out
    assert f"annotated {len(lines) - 3} of {len(lines)} candidates (3 failed" in out
    for line in lines[:3]:
        assert f"failed {line['id']}: image: " in out
    prov = {p["id"]: p for p in _provenance(draft)}
    assert [prov[x["id"]]["status"] for x in lines] == ["failed"] * 3 + ["ok"] * (len(lines) - 3)
    assert "a GIF image" in prov[lines[0]["id"]]["reason"] and prov[lines[0]["id"]]["attempts"] == []
    assert "not a readable image" in prov[lines[1]["id"]]["reason"]
    assert "unreadable or corrupt image" in prov[lines[2]["id"]]["reason"]
    assert len(fake.seen) == len(lines) - 2  # no model request for an image that cannot be read
    images = sorted(p.name for p in (draft / "data" / "images").iterdir())
    assert images == sorted(f"{x['id']}.png" for x in lines[3:])
    assert len(validate_release(draft)) == len(lines) - 3


def _answer(**changes: Any) -> str:
    return json.dumps({**VALID, **changes})


def test_answers_beyond_the_schemas_bounds_are_retried_then_failed(
    selected: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.curate.annotate import MAX_RAW_KEPT

    long_question = "What is it" + "?" * 99_996  # 100,006 characters
    _scripted(
        monkeypatch,
        {
            0: [_answer(question=long_question), _answer()],
            1: [_answer(confidence=0.9)],
            2: [_answer(core_attributes=["a" * 81])],
            3: [_answer(question='Which "object" is it?')],
            4: [_answer(reasoning="r" * 401)],
        },
    )
    draft = tmp_path / "draft"
    assert _annotate(selected, draft) == 0
    prov = _provenance(draft)
    first = prov[0]
    assert first["status"] == "ok" and "a text of 100006 characters" in first["attempts"][0]["error"]
    assert len(first["attempts"][0]["raw"]) == MAX_RAW_KEPT and first["attempts"][0]["raw_chars"] > 100_006
    reasons = [p["reason"] for p in prov[1:5]]
    assert [p["status"] for p in prov[1:5]] == ["failed"] * 4
    assert "field 'confidence' is not in the schema" in reasons[0]
    assert "field 'core_attributes': a text of 81 characters" in reasons[1]
    assert "field 'question'" in reasons[2] and "without quotes" in reasons[2]
    assert "field 'reasoning': a text of 401 characters" in reasons[3]
    records = json.loads((draft / "annotation.json").read_text())
    assert max(len(r["question"]) for r in records) <= 300
    assert "4 failed" in capsys.readouterr().out


def test_duplicate_candidate_ids_are_one_line(
    selected: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = Path(shutil.copytree(selected, tmp_path / "cand"))
    lines = (cand / "candidates.jsonl").read_text().splitlines()
    second = json.loads(lines[1])
    second["id"] = json.loads(lines[0])["id"]
    (cand / "candidates.jsonl").write_text("\n".join([lines[0], json.dumps(second), *lines[2:]]) + "\n")
    draft = tmp_path / "draft"
    assert _annotate(cand, draft) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "line 2: id" in err and "already on line 1" in err
    assert not draft.exists()


def test_each_draft_gets_its_own_id(selected: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, {})
    ids = []
    for name in ("a", "b"):
        assert _annotate(selected, tmp_path / name) == 0
        ids.append(json.loads((tmp_path / name / "annotate.json").read_text())["draft_id"])
    assert ids[0] != ids[1] and all(len(x) == 32 and x.isalnum() for x in ids)


def test_a_symlinked_image_becomes_a_regular_file_in_the_draft(
    selected: Path, image_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, cand, lines = _private(selected, image_tree, tmp_path)
    outside = tmp_path / "elsewhere.png"
    shutil.move(tree / lines[0]["image"], outside)
    (tree / lines[0]["image"]).symlink_to(outside)
    _scripted(monkeypatch, {})
    draft = tmp_path / "draft"
    assert _annotate(cand, draft) == 0
    copied = draft / "data" / "images" / f"{lines[0]['id']}.png"
    assert not copied.is_symlink() and copied.read_bytes() == outside.read_bytes()
    with Image.open(copied) as im:
        assert im.format == "PNG"
