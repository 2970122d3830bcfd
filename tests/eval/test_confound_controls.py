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
from mmspubench.dataset_builder.schema import TYPE_ABBREV

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
    # An always-"A" model on 8 letter-balanced items (gold A, B, C, D, A, B, C, D), built by the
    # real results.json code: vanilla = share of gold A = 2/8 = 25 %, circular 0 (each item is
    # right in exactly one of its four rotations), rotation mean 8/32 = 25 %, consistency 0 (the
    # option at A changes with the rotation), letter share A = 1 (a fraction in results.json).
    from mmspubench.eval.views.confounds.metrics import RotationAnswer, circular_summary, rotated_answer

    golds = "ABCDABCD"
    rotations = [[RotationAnswer(k, rotated_answer(g, k), "A") for k in range(4)] for g in golds]
    circular = circular_summary([("background",)] * 8, rotations, seed=0)
    return {"accuracy": {"n": 8, "overall": 25.0}, "circular": circular}


def test_letter_row_and_table_from_the_circular_view() -> None:
    results = always_a_results()
    assert results["circular"]["letter_share"] == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0, "unparsed": 0.0}
    row = cc.letter_row(RUN, results, samples=[])
    assert (row["vanilla"], row["circular"], row["rotation"], row["consistency"]) == (25.0, 0.0, 25.0, 0.0)
    assert row["letter_share"] == {"A": 100.0, "B": 0.0, "C": 0.0, "D": 0.0, "unparsed": 0.0}
    lines = cc.letter_table([row]).splitlines()
    assert len(lines) == 3 and lines[0].count("|") == lines[1].count("|") == lines[2].count("|") == 16
    # 32 answers all at A against 8 gold letters per letter: chi-square 3 x 8 + 24^2/8 = 96, df 3.
    p = f"{results['circular']['position_bias_p']:.2g}"
    assert float(p) < 1e-15
    assert lines[2] == (
        "| letter-bias | balanced | logprob | 8 | 25.0 | 0.0 | 25.0 | 0.0 | 100.0 | 0.0 | 0.0 | 0.0 | 0.0 "
        f"| all rotations | {p} |"
    )


def test_consistency_is_read_in_percent_and_unparsed_answers_count_in_the_shares() -> None:
    # 4 items always choosing the option published at A (a consistent model: the letter moves with
    # the rotation), one of them unparsed in rotation 3: consistency 3/4 = 75 %, unparsed 1/16.
    from mmspubench.eval.views.confounds.metrics import RotationAnswer, circular_summary, rotated_answer

    rotations = [
        [RotationAnswer(k, rotated_answer(g, k), rotated_answer("A", k)) for k in range(4)] for g in "ABCD"
    ]
    rotations[0][3] = RotationAnswer(3, rotated_answer("A", 3), None)
    row = cc.letter_row(
        RUN,
        {"accuracy": {"n": 4, "overall": 25.0}, "circular": circular_summary([("shape",)] * 4, rotations, 0)},
        [],
    )
    assert row["consistency"] == 75.0 and row["circular"] == 0.0 and row["vanilla"] == 25.0
    # Letters chosen: A in rotation 0 (4), B in 1 (4), C in 2 (4), D in 3 (3) + 1 unparsed, of 16.
    assert row["letter_share"] == {"A": 25.0, "B": 25.0, "C": 25.0, "D": 18.75, "unparsed": 6.25}


def test_letter_row_before_the_circular_view_counts_published_answers() -> None:
    # Predictions A, A, B, unparsed, A of 5 answers: A 60 %, B 20 %, unparsed 20 %.
    samples = [{"prediction": p} for p in ("A", "A", "B", None, "A")]
    row = cc.letter_row(RUN, {"accuracy": {"n": 5, "overall": 40.0}}, samples)
    assert row["letter_share"] == {"A": 60.0, "B": 20.0, "C": 0.0, "D": 0.0, "unparsed": 20.0}
    assert row["circular"] is None and row["shares_over"] == "published order"
    assert cc.letter_table([row]).splitlines()[2] == (
        "| letter-bias | balanced | logprob | 5 | 40.0 | n/a | n/a | n/a | 60.0 | 20.0 | 0.0 | 0.0 | 20.0 "
        "| published order | n/a |"
    )


def test_letter_shares_are_fractions_in_results_json() -> None:
    given = {"A": 0.5, "B": 0.25, "C": 0.125, "D": 0.0, "unparsed": 0.125}
    assert cc.as_percent(given) == {"A": 50.0, "B": 25.0, "C": 12.5, "D": 0.0, "unparsed": 12.5}


@pytest.mark.parametrize(
    "given",
    [
        {"A": 50.0, "B": 25.0, "C": 25.0, "D": 0.0, "unparsed": 0.0},  # percent: not the contract
        {"A": 0.5, "B": 0.25, "C": 0.25, "D": 0.0},  # no unparsed share
        {"A": 0.5, "B": 0.25, "C": 0.0, "D": 0.0, "unparsed": 0.0},  # sums to 0.75
        {"A": 0.5, "B": "0.5", "C": 0.0, "D": 0.0, "unparsed": 0.0},
    ],
)
def test_letter_shares_outside_the_contract_are_refused(given: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"circular\.letter_share"):
        cc.as_percent(given)


def prior_results(with_blind: bool) -> dict[str, Any]:
    by_type = {"BG": 100.0, "TN": 30.0, "CO": 30.0, "RS": None, "Col.": 80.0}
    by_type |= {"Ori.": 30.0, "LS": 30.0, "PA": 30.0, "Sha.": 30.0}
    results: dict[str, Any] = {"accuracy": {"n": 90, "overall": 40.0, "by_type": by_type}}
    if with_blind:
        blind = dict.fromkeys(by_type, 25.0) | {"BG": 95.0, "Col.": 85.0, "RS": None}
        results["blind"] = {"accuracy": 35.0, "by_type": blind, "gain": 5.0, "image": "none", "n": 90}
        results["blind"] |= {"gain_ci95": [1.0, 9.0], "gain_p_value": 0.04, "only_with_image": 7}
        results["blind"] |= {"only_blind": 2, "unparsed": 1}
    return results


def test_prior_rows_and_table_mark_the_planted_types_and_average_them() -> None:
    run = {"model": "text-prior", "release": "prior", "mode": "generate"}
    rows = cc.prior_rows(run, prior_results(with_blind=True), grey=False)
    assert [r["view"] for r in rows] == ["with image", "blind (none)"]
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


def test_prior_rows_read_the_blind_section_as_written() -> None:
    # Built by the real results.json code: two background items right without the image, two
    # shape items of which one is right: blind BG 100 %, Sha. 50 %, the other types without items.
    from mmspubench.eval.views.confounds.metrics import blind_summary

    types = [("background",), ("background",), ("shape",), ("shape",)]
    blind = blind_summary(["a", "b", "c", "d"], types, [False] * 4, [True, True, True, False], 0, "grey")
    accuracy = {"n": 4, "overall": 0.0, "by_type": dict.fromkeys(cc.ABBREVS, None) | {"BG": 0.0, "Sha.": 0.0}}
    run = {"model": "text-prior", "release": "prior", "mode": "generate"}
    rows = cc.prior_rows(run, {"accuracy": accuracy, "blind": blind}, grey=False)
    assert rows[1]["view"] == "blind (grey)" and rows[1]["n"] == 4
    assert rows[1]["by_type"] == dict.fromkeys(cc.ABBREVS, None) | {"BG": 100.0, "Sha.": 50.0}
    # Gain: with the image 0 of 4 right, blind 3 of 4: -75 pp, 0 items only with the image, 3 only blind.
    gain = cc.gain_table(rows).splitlines()
    assert len(gain) == 3 and gain[0].count("|") == gain[2].count("|") == 12
    assert gain[2].startswith("| text-prior | prior | generate | blind (grey) | 4 | 75.0 | -75.0 [")
    assert gain[2].endswith(f"| {blind['gain_p_value']:.2g} | 0 | 3 | 0 |") and blind["gain_p_value"] == 0.25
    assert cc.render_tables([], rows, ("background",)).endswith("\n".join(gain) + "\n\n")
    assert cc.gain_table(rows[:1]) == ""
    line = cc.prior_table(rows, ("background",)).splitlines()[3]
    assert line.endswith("| 100.0 | n/a | n/a | n/a | n/a | n/a | n/a | n/a | 50.0 | 100.0 | 50.0 |")


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


def test_every_planned_run_has_a_folder_of_its_own() -> None:
    models = {"letter-bias": Path("l"), "text-prior": Path("t"), "balanced": Path("b")}
    releases = dict.fromkeys(("balanced", "skewed", "prior", "prior-grey", "balanced-grey"), Path("r"))
    names = [
        cc.run_name(t, m, r, mode)
        for t, m, r, _ in cc.plan(models, releases, False)
        for mode in ("generate", "logprob")
    ]
    assert len(names) == len(set(names)) == 24


def test_planted_options_are_read_from_training_json(tmp_path: Path) -> None:
    assert cc.planted(ASSETS / "tiny-llava-balanced") == {"letter_bias": None, "text_prior_types": None}
    config = {"config": {"letter_bias": ["A", 0.9], "text_prior_types": ["background"]}}
    (tmp_path / "training.json").write_text(json.dumps(config))
    assert cc.planted(tmp_path) == {"letter_bias": ("A", 0.9), "text_prior_types": ("background",)}


def test_grey_copy_keeps_the_records_and_sizes(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.synth.generate import generate_items, write_release
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
        {"correlation": 0.95, "reasoning": True},
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
    patterns = pyproject["tool"]["setuptools"]["package-data"]["mmspubench.eval.assets"]
    shipped = {p for pattern in patterns for p in ASSETS.glob(pattern) if p.is_file()}
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


@pytest.mark.slow
def test_the_shipped_controls_separate_in_generate_mode(tmp_path: Path) -> None:
    """The shipped control models, end to end (about 2 minutes): the circular view exposes the
    letter bias and the blind view the text prior where it was planted (the figures of the
    positive-controls page, with margins; the 2000-step text-prior model, which did not learn the
    prior, fails the second half: planted types 14.4 % blind)."""
    assert cc.main(["--out", str(tmp_path / "out"), "--modes", "generate", "--n", "450"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    letter = {(r["model"], r["release"]): r for r in summary["letter_rows"]}
    for release in ("balanced", "skewed"):
        biased, twin = letter["letter-bias", release], letter["balanced", release]
        assert biased["circular"] == 0.0 and biased["letter_share"]["A"] > 80.0  # 0.0, 91.3
        assert twin["circular"] > 20.0 and twin["position_bias_p"] > 0.05  # 30.7, p 0.72 / 0.79
    assert letter["letter-bias", "skewed"]["vanilla"] > 70.0  # 80.2: vanilla accuracy rewards the bias

    planted = [TYPE_ABBREV[t] for t in summary["planted"]["text_prior_types"]]

    def blind_means(model: str, release: str) -> tuple[float, float]:
        [row] = [
            r
            for r in summary["prior_rows"]
            if (r["model"], r["release"], r["view"]) == (model, release, "blind (none)")
        ]
        inside = [v for k, v in row["by_type"].items() if k in planted]
        outside = [v for k, v in row["by_type"].items() if k not in planted]
        return sum(inside) / len(inside), sum(outside) / len(outside)

    worded_in, worded_out = blind_means("text-prior", "prior")
    plain_in, _ = blind_means("text-prior", "balanced")
    twin_in, _ = blind_means("balanced", "prior")
    assert worded_in > 50.0 and worded_out < 35.0  # 71.5 and 23.6
    assert plain_in < 35.0 and twin_in < 35.0  # 19.9 without the wording; the twin 19.3
