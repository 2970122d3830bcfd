"""``compare`` and interventions: a run against itself intervened (``--b-view intervention:NAME``)
and two runs' interventions side by side; every expectation computed by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main

from tests.eval.compare_fakes import Asked, Item, write_run
from tests.eval.views.interventions.test_report import TYPES, _items

T, F = True, False
# run B: published answer right, right under grayscale, right under blur
ROWS_B = [(T, F, T), (T, T, T), (F, F, T), (F, F, T)]


def _items_b() -> list[Item]:
    return [
        Item(f"{i}", TYPES[i], v, interventions=(Asked("grayscale", g), Asked("blur", b)))
        for i, (v, g, b) in enumerate(ROWS_B)
    ]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    # run A: published [1, 0, 0, 1], grayscale [1, 1, 0, 1], cf:cue-aligned [1, 1, 1, 1]
    return write_run(tmp_path / "a", _items()), write_run(tmp_path / "b", _items_b(), model="model-b")


def _doc(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["compare", *argv, "--json", "-"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _group(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in doc["groups"] if g["group"] == name)


def _one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["compare", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err


# ------------------------------------------------------------------ a run against itself intervened


def test_a_run_against_itself_under_grayscale_by_hand(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = runs[0]
    results = json.loads((run / "results.json").read_text())
    seed = str(results["config"]["seed"])
    doc = _doc(capsys, str(run), str(run), "--b-view", "intervention:grayscale", "--seed", seed)
    acc = _group(doc, "Overall")["accuracy"]
    # published [1, 0, 0, 1] = 50%, grayscale [1, 1, 0, 1] = 75%; right under grayscale only: item 1
    assert (acc["a"], acc["b"], acc["difference"], acc["only_a"], acc["only_b"], acc["p_value"]) == (
        50.0,
        75.0,
        25.0,
        0,
        1,
        1.0,
    )
    # the run's own change under grayscale is this comparison's B - A (same seed: same interval)
    change = results["interventions"]["by_intervention"]["grayscale"]["change"]
    assert change["gain"] == acc["difference"] and change["mcnemar_p"] == acc["p_value"]
    assert change["ci95"] == pytest.approx(acc["ci95"])
    # Col. holds items 1 and 2: [0, 0] -> [1, 0]
    assert (_group(doc, "Col.")["accuracy"]["a"], _group(doc, "Col.")["accuracy"]["b"]) == (0.0, 50.0)
    assert doc["b"]["view"].startswith("intervention:grayscale (colour removed")
    assert doc["config_differences"]["view"] == ["image", "intervention:grayscale"]
    assert "interventions" not in doc and "interventions" not in _group(doc, "Overall")  # B has none


def test_the_intervened_side_carries_its_cgla(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "c", _items(cgla=True))
    doc = _doc(capsys, str(run), str(run), "--a-view", "intervention:cf:cue-aligned")
    cgla = _group(doc, "Overall")["cgla_acc"]
    # CGLA_min under cf:cue-aligned [1, 1, -1, 1] (A) against published [1, -1, 1, -1] (B)
    assert (cgla["a"], cgla["b"], cgla["only_a"], cgla["only_b"]) == (75.0, 50.0, 2, 1)
    assert (
        _group(doc, "Overall")["cgla_min"]["a"] == 0.5 and doc["a"]["view"] == "intervention:cf:cue-aligned"
    )


@pytest.mark.parametrize(
    ("view", "needle"),
    [
        (
            "intervention:blur",
            "no record holds the intervention 'blur' (the run has grayscale, cf:cue-aligned)",
        ),
        ("intervention:", "name one intervention after 'intervention:'"),
        ("intervention:cf:*", "cf:* stands for several counterfactuals; name one"),
        ("intervention:cf:cue-removed", "no record holds the intervention 'cf:cue-removed'"),
    ],
)
def test_an_intervention_the_run_lacks_is_one_line(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], view: str, needle: str
) -> None:
    out = tmp_path / "cmp.json"
    err = _one_line_error(capsys, str(runs[0]), str(runs[0]), "--b-view", view, "--json", str(out))
    assert f"--b-view {view}: " in err and needle in err, err
    assert not out.exists()


def test_a_run_without_interventions_and_a_bad_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = write_run(tmp_path / "p", [Item(f"{i}", TYPES[i], i % 2 == 0) for i in range(4)])
    err = _one_line_error(capsys, str(plain), str(plain), "--a-view", "intervention:grayscale")
    assert "the run has none (eval --metrics accuracy,interventions)" in err
    with pytest.raises(SystemExit):
        main(["compare", str(plain), str(plain), "--b-view", "grayscale"])
    assert "expected image, blind or intervention:NAME, got 'grayscale'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("view", "hint"),
    [
        ("grayscale", " (did you mean intervention:grayscale?)"),
        ("blur", " (did you mean intervention:blur?)"),
        ("cf:cue-aligned", " (did you mean intervention:cf:cue-aligned?)"),
        ("greyscale", " (did you mean intervention:grayscale?)"),
        ("intervention", " (did you mean intervention:NAME, e.g. intervention:grayscale?)"),
        ("blnd", " (did you mean blind?)"),
        ("Image", " (did you mean image?)"),
        ("xyz", ""),
    ],
)
def test_a_bad_view_suggests_the_closest(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], view: str, hint: str
) -> None:
    with pytest.raises(SystemExit):
        main(["compare", str(runs[0]), str(runs[0]), "--b-view", view])
    err = capsys.readouterr().err
    assert "Traceback" not in err  # the usage, then the one line
    assert err.splitlines()[-1].endswith(f"expected image, blind or intervention:NAME, got {view!r}{hint}"), (
        err
    )


@pytest.mark.parametrize("flag", ["--a-view", "--b-view"])
def test_the_blind_view_of_a_run_with_cgla_and_interventions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    # published [1, 0, 0, 1], blind [0, 0, 1, 1]: each run alone is valid (report takes it)
    items = [
        Item(
            f"{i}",
            TYPES[i],
            v,
            cgla_min=1.0,
            blind=blind,
            interventions=(Asked("grayscale", g, cgla_min=-1.0),),
        )
        for i, (v, blind, g) in enumerate([(T, F, T), (F, F, T), (F, T, F), (T, T, T)])
    ]
    run = write_run(tmp_path / "v", items)
    assert json.loads((run / "results.json").read_text())["config"]["metrics"] == [
        "accuracy",
        "cgla",
        "blind",
        "interventions",
    ]
    doc = _doc(capsys, str(run), str(run), flag, "blind")
    acc = _group(doc, "Overall")["accuracy"]
    blind_side, image_side = ("a", "b") if flag == "--a-view" else ("b", "a")
    assert (acc[image_side], acc[blind_side]) == (50.0, 50.0)
    assert (acc["only_a"], acc["only_b"]) == (1, 1)
    # the blind side has no CGLA and no interventions: no CGLA figures, no intervention pairs
    assert _group(doc, "Overall")["cgla_acc"] is None
    assert "interventions" not in doc and "interventions" not in _group(doc, "Overall")
    assert doc[blind_side]["view"] == "blind (no image)"


def _partial(tmp_path: Path) -> Path:
    """A ``cf:*`` run whose item 3 ships no counterfactual."""
    items = [
        Item(f"{i}", TYPES[i], i != 1, interventions=(Asked("cf:cue-aligned", True),) if i < 3 else ())
        for i in range(4)
    ]
    return write_run(tmp_path / "cf", items, interventions=("cf:*",))


def test_an_item_without_the_entry_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _partial(tmp_path)
    err = _one_line_error(capsys, str(run), str(run), "--b-view", "intervention:cf:cue-aligned")
    assert "record '3' has no 'cf:cue-aligned' entry (1 of 4 items lack it)" in err
    # side by side, it is not compared, and the output says so
    assert main(["compare", str(run), str(run)]) == 0
    out = capsys.readouterr().out
    assert "Under cf:cue-aligned" not in out
    assert out.rstrip().endswith("Interventions not compared (not on every item: cf:cue-aligned)")


def _tamper(run: Path, line: int, edit: Any) -> None:
    path = run / "samples.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines[line])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r["interventions"][0].update(correct=False), "interventions.correct"),
        (lambda r: r["interventions"][0].update(prediction="Z"), "interventions.prediction"),
        (lambda r: r["interventions"][0].update(name="blur"), "interventions"),
        (lambda r: r["interventions"].pop(), "interventions"),
    ],
)
@pytest.mark.parametrize("view", [None, "intervention:grayscale"])
def test_edited_entries_are_refused(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], edit: Any, field: str, view: str | None
) -> None:
    _tamper(runs[0], 1, edit)  # item 1: right under grayscale
    argv = [str(runs[0]), str(runs[0] if view else runs[1]), *(["--b-view", view] if view else [])]
    err = _one_line_error(capsys, *argv)
    assert f"samples.jsonl: record '1': field '{field}'" in err, err


# ------------------------------------------------------------------ two runs side by side


def test_two_runs_under_their_shared_intervention_by_hand(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _doc(capsys, *map(str, runs))
    assert doc["interventions"] == {
        "compared": ["grayscale"],
        "only_a": ["cf:cue-aligned"],
        "only_b": ["blur"],
        "partial": [],
    }
    grey = _group(doc, "Overall")["interventions"]["grayscale"]
    acc, change = grey["accuracy"], grey["change"]
    # under grayscale: A [1, 1, 0, 1] = 75%, B [0, 1, 0, 0] = 25%; right in A only: items 0, 3
    assert (acc["a"], acc["b"], acc["difference"], acc["only_a"], acc["only_b"], acc["p_value"]) == (
        75.0,
        25.0,
        -50.0,
        2,
        0,
        0.5,
    )
    # change per item: A [0, +100, 0, 0] -> +25, B [-100, 0, 0, 0] -> -25
    assert (change["a"], change["b"], change["difference"]) == (25.0, -25.0, -50.0)
    # Col. (items 1, 2): A [+100, 0], B [0, 0]; a type without items has none
    assert _group(doc, "Col.")["interventions"]["grayscale"]["change"]["a"] == 50.0
    assert "interventions" not in _group(doc, "TN")


def test_the_markdown_shows_each_shared_intervention(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", *map(str, runs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(
        "Under grayscale (accuracy under it, %; change: under it - published, percentage points, per item paired)"
    )
    # the adjusted p-values (Holm, across the rows) after McNemar's, and the change's bootstrap p
    assert lines[at + 2].endswith(
        "| McNemar p | Holm p | change A | change B | B - A [95% CI] | bootstrap p | Holm p |"
    )
    overall = lines[at + 4]
    assert (
        overall.startswith("| Overall | 4 | 75.00 | 25.00 | -50.00 [")
        and "| 2 | 0 | 0.5 | 1 | +25.00 | -25.00 | -50.00 [" in overall
    )
    assert lines[at + 6].startswith("| TN | 0 | — |")
    assert lines[-1] == "Interventions not compared (only in A: cf:cue-aligned; only in B: blur)"


def test_runs_without_interventions_compare_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", [Item(f"{i}", TYPES[i], i % 2 == 0) for i in range(4)])
    b = write_run(tmp_path / "b", [Item(f"{i}", TYPES[i], i < 2) for i in range(4)], model="m-b")
    doc = _doc(capsys, str(a), str(b))
    assert "interventions" not in doc and all("interventions" not in g for g in doc["groups"])
    assert set(_group(doc, "Overall")) == {"group", "n", "accuracy", "cgla_acc", "cgla_min"}


def test_a_long_name_and_a_malformed_config_are_short_single_lines(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_error(capsys, str(runs[0]), str(runs[0]), "--b-view", "intervention:" + "x" * 5000)
    assert len(err) < 400 and "no record holds the intervention 'xxx" in err
    path = runs[0] / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "config": 7}))
    err = _one_line_error(capsys, str(runs[0]), str(runs[0]), "--b-view", "intervention:grayscale")
    assert err.count("--b-view") == 1 and "results.json: field 'config' is malformed" in err, err


def test_the_intervened_side_carries_its_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sure_a, sure_b = (0.0, -1000.0, -1000.0, -1000.0), (-1000.0, 0.0, -1000.0, -1000.0)
    items = [
        Item("0", ("background",), True, scores=sure_a, interventions=(Asked("blur", False, scores=sure_b),)),
        Item("1", ("shape",), False, scores=sure_b, interventions=(Asked("blur", True, scores=sure_a),)),
    ]
    run = write_run(tmp_path / "lp", items)
    overall = _group(_doc(capsys, str(run), str(run), "--b-view", "intervention:blur"), "Overall")
    # published: Brier 0 (item 0, sure and right) and 2 (item 1, sure and wrong); under blur: 2 and 0
    assert (overall["accuracy"]["only_a"], overall["accuracy"]["only_b"]) == (1, 1)
    assert (overall["brier"]["a"], overall["brier"]["b"], overall["ece"]["a"], overall["ece"]["b"]) == (
        1.0,
        1.0,
        0.5,
        0.5,
    )
