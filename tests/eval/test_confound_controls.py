"""The planted-confound experiment (bench/confound_controls.py): rows and tables from results dicts.

The results dicts are fabricated in the shape of the contract (results.json ``accuracy``,
``circular``, ``blind``), so every expected cell is computed by hand.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "confound_controls.py"
ASSETS = Path(__file__).resolve().parents[2] / "eval" / "assets"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("confound_controls", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cc = load_script()
RUN = {"model": "letter-bias", "release": "balanced", "mode": "logprob"}


def always_a_results() -> dict[str, Any]:
    # An always-"A" model on 8 letter-balanced items: vanilla = share of gold A = 2/8 = 25 %,
    # circular 0 (no item is right in all four rotations), letter share A = 1.
    return {
        "accuracy": {"n": 8, "overall": 25.0},
        "circular": {
            "accuracy": 0.0,
            "vanilla_accuracy": 25.0,
            "rotation_accuracy": 25.0,
            "consistency": 0.0,
            "letter_share": {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0},
            "position_bias_p": 1.2e-5,
            "by_type": {},
        },
    }


def test_letter_row_and_table_from_the_circular_view() -> None:
    row = cc.letter_row(RUN, always_a_results(), samples=[])
    assert (row["vanilla"], row["circular"], row["rotation"], row["consistency"]) == (25.0, 0.0, 25.0, 0.0)
    assert row["letter_share"] == {"A": 100.0, "B": 0.0, "C": 0.0, "D": 0.0}
    lines = cc.letter_table([row]).splitlines()
    assert len(lines) == 3 and lines[0].count("|") == lines[1].count("|") == lines[2].count("|") == 15
    assert lines[2] == (
        "| letter-bias | balanced | logprob | 8 | 25.0 | 0.0 | 25.0 | 0.0 | 100.0 | 0.0 | 0.0 | 0.0 "
        "| all rotations | 1.2e-05 |"
    )


def test_letter_row_before_the_circular_view_counts_published_answers() -> None:
    # Predictions A, A, A, B and one unparsed: the unparsed answer is apart, A = 3/4, B = 1/4.
    samples = [{"prediction": p} for p in ("A", "A", "B", None, "A")]
    row = cc.letter_row(RUN, {"accuracy": {"n": 5, "overall": 40.0}}, samples)
    assert row["letter_share"] == {"A": 75.0, "B": 25.0, "C": 0.0, "D": 0.0}
    assert row["circular"] is None and row["shares_over"] == "published order"
    assert cc.letter_table([row]).splitlines()[2] == (
        "| letter-bias | balanced | logprob | 5 | 40.0 | n/a | n/a | n/a | 75.0 | 25.0 | 0.0 | 0.0 "
        "| published order | n/a |"
    )


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"A": 0.5, "B": 0.25, "C": 0.25, "D": 0.0}, {"A": 50.0, "B": 25.0, "C": 25.0, "D": 0.0}),
        ({"A": 50.0, "B": 25.0, "C": 25.0}, {"A": 50.0, "B": 25.0, "C": 25.0, "D": 0.0}),
    ],
)
def test_letter_shares_are_percent_whatever_the_file_gives(
    given: dict[str, float], expected: dict[str, float]
) -> None:
    assert cc.as_percent(given) == expected


def prior_results(with_blind: bool) -> dict[str, Any]:
    by_type = {"BG": 100.0, "TN": 30.0, "CO": 30.0, "RS": None, "Col.": 80.0}
    by_type |= {"Ori.": 30.0, "LS": 30.0, "PA": 30.0, "Sha.": 30.0}
    results: dict[str, Any] = {"accuracy": {"n": 90, "overall": 40.0, "by_type": by_type}}
    if with_blind:
        blind = dict.fromkeys(by_type, 25.0) | {"BG": 95.0, "Col.": 85.0, "RS": None}
        results["blind"] = {"accuracy": 35.0, "by_type": blind, "gain": 5.0, "answerable_blind": []}
    return results


def test_prior_rows_and_table_mark_the_planted_types_and_average_them() -> None:
    run = {"model": "text-prior", "release": "prior", "mode": "generate"}
    rows = cc.prior_rows(run, prior_results(with_blind=True), grey=False)
    assert [r["view"] for r in rows] == ["with image", "blind"]
    lines = cc.prior_table(rows, ("background", "colorization")).splitlines()
    assert lines[0] == (
        "| model | test release | answer mode | view | n | BG* | TN | CO | RS | Col.* | Ori. | LS | PA | Sha. "
        "| planted mean | others mean |"
    )
    assert lines[1].count("|") == lines[0].count("|")
    # With the image: planted (100 + 80) / 2 = 90; others six types at 30, RS has no items.
    assert lines[2] == (
        "| text-prior | prior | generate | with image | 90 | 100.0 | 30.0 | 30.0 | n/a | 80.0 | 30.0 | 30.0 "
        "| 30.0 | 30.0 | 90.0 | 30.0 |"
    )
    # Blind: planted (95 + 85) / 2 = 90, others 25.
    assert lines[3].endswith("| 95.0 | 25.0 | 25.0 | n/a | 85.0 | 25.0 | 25.0 | 25.0 | 25.0 | 90.0 | 25.0 |")


def test_prior_rows_without_the_blind_view_or_on_a_grey_release() -> None:
    run = {"model": "balanced", "release": "prior-grey", "mode": "generate"}
    assert [r["view"] for r in cc.prior_rows(run, prior_results(False), grey=False)] == ["with image"]
    grey = cc.prior_rows(run, prior_results(True), grey=True)
    assert [r["view"] for r in grey] == ["grey image"] and grey[0]["by_type"]["BG"] == 100.0


def test_plan_pairs_each_control_with_the_balanced_twin() -> None:
    models = {"letter-bias": Path("l"), "text-prior": Path("t"), "balanced": Path("b")}
    releases = dict.fromkeys(("balanced", "skewed", "prior", "prior-grey", "balanced-grey"), Path("r"))
    full = cc.plan(models, releases, accuracy_only=False)
    assert ("letter", "letter-bias", "skewed", ("accuracy", "circular")) in full
    assert ("prior", "text-prior", "prior", ("accuracy", "blind")) in full
    assert ("prior", "balanced", "balanced-grey", ("accuracy",)) in full
    assert len(full) == 12 and not [r for r in full if r[0] == "letter" and r[1] == "text-prior"]
    assert {r[3] for r in cc.plan(models, releases, accuracy_only=True)} == {("accuracy",)}
    letter_only = cc.plan({"letter-bias": Path("l"), "balanced": Path("b")}, releases, accuracy_only=True)
    assert {(r[0], r[2]) for r in letter_only} == {("letter", "balanced"), ("letter", "skewed")}


def test_planted_options_are_read_from_training_json(tmp_path: Path) -> None:
    assert cc.planted(ASSETS / "tiny-llava-balanced") == {"letter_bias": None, "text_prior_types": None}
    config = {"config": {"letter_bias": ["A", 0.9], "text_prior_types": ["background"]}}
    (tmp_path / "training.json").write_text(json.dumps(config))
    assert cc.planted(tmp_path) == {"letter_bias": ("A", 0.9), "text_prior_types": ("background",)}


def test_grey_copy_keeps_the_records_and_sizes(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.synth import generate_items, write_release
    from PIL import Image

    release = write_release(tmp_path / "raw", generate_items(3, seed=1, image_size=32))
    grey = cc.grey_copy(release, tmp_path / "grey")
    assert (grey / "annotation.json").read_bytes() == (release / "annotation.json").read_bytes()
    for path in sorted((grey / "data" / "images").iterdir()):
        with Image.open(path) as image:
            assert image.size == (32, 32) and image.convert("RGB").getcolors() == [(32 * 32, (128, 128, 128))]


def load_cards() -> ModuleType:
    spec = importlib.util.spec_from_file_location("confound_cards", SCRIPT.with_name("confound_cards.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "planting",
    [
        {"letter_bias": ("A", 0.9)},
        {"text_prior_types": ("background", "colorization")},
        {"correlation": 0.95},
        {"text_prior_types": ("shape",), "steps": 1000},
        {},
    ],
)
def test_card_command_reproduces_the_recorded_config(planting: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    from dataclasses import asdict

    from mmspubench.eval.tiny.train import TrainConfig, parse_args

    config = json.loads(
        json.dumps(asdict(TrainConfig(**({"out": "eval/assets/x", "correlation": None} | planting))))
    )
    command = load_cards().train_command(config)
    assert command.startswith("python -m mmspubench.eval.tiny.train --out eval/assets/x")
    assert json.loads(json.dumps(asdict(parse_args(command.split()[3:])))) == config


def test_card_says_what_was_planted_and_how() -> None:
    training = json.loads((ASSETS / "tiny-llava-balanced" / "training.json").read_text())
    training["config"] |= {"letter_bias": ["A", 0.9], "out": "eval/assets/tiny-llava-letter-bias"}
    card = load_cards().model_card("tiny-llava-letter-bias", training, "| t |", "python bench/x.py")
    assert "gold answer at letter A with probability 0.9" in card
    assert "--letter-bias A:0.9" in card and "| t |" in card and "python bench/x.py" in card
    assert "**text prior**" not in card
    assert "same architecture, data size, seed and budget" in card
    training["config"]["steps"] = 1000
    card = load_cards().model_card("x", training, "", "")
    assert "but 1000 optimiser steps instead of the twin's 2000" in card


@pytest.mark.parametrize("name", ["tiny-llava-letter-bias", "tiny-llava-text-prior"])
def test_control_models_ship_with_package_data_and_record_their_planting(name: str) -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    root = ASSETS.parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["mmspubench.eval"]
    shipped = {p for pattern in patterns for p in (root / "eval").glob(pattern) if p.is_file()}
    folder = ASSETS / name
    files = {p for p in folder.rglob("*") if p.is_file()}
    assert folder / "model.safetensors" in files and files <= shipped
    recorded = cc.planted(folder)
    if name.endswith("letter-bias"):
        assert recorded == {"letter_bias": ("A", 0.9), "text_prior_types": None}
    else:
        assert recorded["letter_bias"] is None and recorded["text_prior_types"]
    assert "mmspubench.eval.tiny.train" in (folder / "README.md").read_text(encoding="utf-8")


def test_only_the_controls_that_ran_are_printed() -> None:
    row = cc.letter_row(RUN, always_a_results(), samples=[])
    assert cc.render_tables([row], [], ()) == cc.letter_table([row]) + "\n\n"
    assert cc.render_tables([], [], ()) == ""
