"""``mmspubench compare`` on hand-made run folders: output, JSON, and refusals of unpaired runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mmspubench.cli import main

from tests.eval.compare_fakes import DATASET, Item, write_run

TYPES = (("background",), ("shape",), ("background", "shape"), ("colorization",))


def _items(pattern: str, shift: float = 0.0) -> list[Item]:
    return [
        Item(f"{i:03d}", TYPES[i % len(TYPES)], ch == "1", cgla_min=(i % 3) - 1.0 + shift)
        for i, ch in enumerate(pattern)
    ]


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = write_run(tmp_path / "a", _items("1100110011"), model="model-a")
    b = write_run(tmp_path / "b", _items("1111111010", shift=0.5), model="model-b")
    return a, b


def test_markdown_and_json_give_the_same_figures(
    two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b / "results.json"), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    overall = doc["groups"][0]
    assert overall["group"] == "Overall" and overall["n"] == 10 == doc["n"]
    # A right on 0,1,4,5,8,9; B right on 0-6 and 8: right in A only {9}, in B only {2,3,6}.
    acc = overall["accuracy"]
    assert (acc["a"], acc["b"], acc["only_a"], acc["only_b"]) == (60.0, 80.0, 1, 3)
    assert acc["difference"] == pytest.approx(20.0)
    assert acc["p_value"] == pytest.approx(2 * (1 + 4) / 16)
    assert overall["cgla_min"]["difference"] == pytest.approx(0.5)
    assert overall["cgla_min"]["ci95"] == pytest.approx([0.5, 0.5])
    assert "| Overall | 10 | 60.00 | 80.00 | +20.00 [" in text and "| 1 | 3 | 0.625 |" in text
    assert "CGLA (CGLA_acc in %" in text and doc["a"]["variant"] == "standard"
    assert doc["a"]["model"] == "model-a" and doc["b"]["model"] == "model-b"


def test_json_to_stdout(two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    assert main(["compare", str(a), str(b), "--json", "-", "--resamples", "50", "--seed", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["seed"], doc["resamples"]) == (3, 50)


def test_the_variant_is_read_from_the_config_when_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", _items("1010"))
    b = write_run(tmp_path / "b", _items("1110"))
    res = json.loads((b / "results.json").read_text())
    res["config"]["prompt_variant"] = "core-focus"
    (b / "results.json").write_text(json.dumps(res))
    assert main(["compare", str(a), str(b), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # results.json records the variant, standard too (older files lack it and read as standard)
    assert doc["b"]["variant"] == "core-focus" and doc["config_differences"]["prompt_variant"] == [
        "standard",
        "core-focus",
    ]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr()
    assert err.out == "" and err.err.count("\n") == 1 and "Traceback" not in err.err
    for needle in needles:
        assert needle in err.err, err.err


def test_runs_on_different_items_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", _items("1100110011"))
    b = write_run(tmp_path / "b", _items("11001100"))  # the first 8 items only (--limit 8)
    out = tmp_path / "cmp.json"
    _refused(
        capsys, ["compare", str(a), str(b), "--json", str(out)], "not runs on the same items", "only in A"
    )
    assert not out.exists()


def test_runs_on_another_dataset_or_split_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", _items("1010"))
    b = write_run(tmp_path / "b", _items("1010"), dataset={**DATASET, "content_hash": "beef"})
    _refused(capsys, ["compare", str(a), str(b)], "dataset.content_hash", "'c0ffee' vs 'beef'")
    c = write_run(tmp_path / "c", _items("1010"))
    res = json.loads((c / "results.json").read_text())
    res["dataset"]["split"] = "validation"
    (c / "results.json").write_text(json.dumps(res))
    _refused(capsys, ["compare", str(a), str(c)], "dataset.split")


def test_same_ids_with_other_answers_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", _items("1010"))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    lines = (b / "samples.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["types"] = ["orientation"]
    (b / "samples.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    _refused(capsys, ["compare", str(a), str(b)], "record '000'", "field 'types'")


def test_unfinished_or_missing_runs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", _items("1010"))
    _refused(capsys, ["compare", str(a), str(tmp_path / "nope")], "no such run folder")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    with (b / "samples.jsonl").open("a") as handle:
        handle.write('{"id": "004"')  # a killed run's partial last line
    _refused(capsys, ["compare", str(a), str(b)], "last line is incomplete")
    c = tmp_path / "c"
    shutil.copytree(a, c)
    (c / "samples.jsonl").write_text("\n".join((a / "samples.jsonl").read_text().splitlines()[:3]) + "\n")
    _refused(capsys, ["compare", str(a), str(c)], "holds 3 item(s)", "'dataset.n' says 4")


def test_bad_options_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", _items("1010"))
    b = write_run(tmp_path / "b", _items("0110"))
    out = tmp_path / "cmp.json"
    _refused(
        capsys,
        ["compare", str(a), str(b), "--json", str(out), "--plot", str(tmp_path / "x.jpg")],
        ".png or .svg",
    )
    _refused(capsys, ["compare", str(a), str(b), "--json", str(out), "--resamples", "0"], "--resamples")
    _refused(capsys, ["compare", str(a), str(b), "--json", str(out), "--seed", "-1"], "--seed")
    assert not out.exists()


def test_accuracy_only_runs_compare_accuracy_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [Item(f"{i}", ("background",), i % 2 == 0) for i in range(4)]
    a = write_run(tmp_path / "a", items)
    b = write_run(tmp_path / "b", [Item(i.id, i.types, not i.correct) for i in items])
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "| Overall | 4 | 50.00 | 50.00 | +0.00 [" in text and "CGLA (" not in text
