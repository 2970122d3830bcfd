"""bench/intervention_controls.py: rows and tables from results.json, the contrast difference, and
(slow) the shipped controls separating under the interventions view."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "intervention_controls", ROOT / "bench" / "intervention_controls.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ic = load_script()
RUN = {"model": "m", "release": "cf", "mode": "generate"}


def change(gain: float, by_type: dict[str, float | None]) -> dict[str, Any]:
    return {
        "gain": gain,
        "ci95": [gain - 1, gain + 1],
        "mcnemar_p": 0.5,
        "only_vanilla": 0,
        "only_intervened": 0,
        "by_type": by_type,
        "ci95_by_type": {k: None if v is None else [v - 2, v + 2] for k, v in by_type.items()},
    }


def sample(i: int, types: list[str], correct: bool, gray_correct: bool) -> dict[str, Any]:
    entry = {"name": "grayscale", "digest": "x", "prediction": None, "correct": gray_correct}
    return {"id": f"{i:06d}", "types": types, "correct": correct, "interventions": [entry]}


def results(gain_col: float = 10.0) -> dict[str, Any]:
    gray = {
        "targets": ["Col."],
        "description": "d",
        "n": 4,
        "accuracy": {"overall": 50.0},
        "change": change(0.0, {"Col.": gain_col, "BG": -10.0}),
        "flip_rate": 25.0,
        "targeted_contrast": {
            "value": 20.0,
            "ci95": [1.0, 30.0],
            "targeted_change": gain_col,
            "other_change": -50.0,
            "n_targeted": 2,
            "n_other": 2,
        },
        "gold_prob_change": None,
    }
    return {
        "accuracy": {"overall": 50.0, "n": 4, "n_by_type": {"Col.": 2, "BG": 2}},
        "interventions": {
            "names": ["grayscale"],
            "by_intervention": {"grayscale": gray},
            "counterfactual_gaps": {
                "aligned_minus_broken": change(30.0, {"Col.": 50.0, "BG": 10.0}),
                "removed_minus_broken": change(5.0, {"Col.": 5.0, "BG": None}),
            },
        },
    }


SAMPLES = [
    sample(0, ["colorization"], False, True),
    sample(1, ["background", "colorization"], True, True),
    sample(2, ["background"], True, False),
    sample(3, ["background"], False, False),
]


def test_gap_rows_hold_every_type_with_its_n_and_interval() -> None:
    rows = {r["type"]: r for r in ic.gap_rows(RUN, results())}
    assert list(rows) == ["all", *ic.ABBREVS]
    assert rows["all"]["n"] == 4 and rows["all"]["aligned_minus_broken"]["value"] == 30.0
    assert rows["Col."]["aligned_minus_broken"] == {"value": 50.0, "ci95": [48.0, 52.0]}
    assert rows["BG"]["removed_minus_broken"] == {"value": None, "ci95": None}
    assert rows["TN"]["n"] == 0 and rows["TN"]["aligned_minus_broken"]["value"] is None
    table = ic.gap_table(list(rows.values()), "generate")
    assert "| m | Col. | 2 | +50.0 [+48.0, +52.0] | +5.0 [+3.0, +7.0] |" in table
    assert "| m | TN | 0 | n/a | n/a |" in table
    assert ic.gap_table(list(rows.values()), "logprob").count("| m |") == 0


def test_grayscale_row_takes_the_views_figures_and_pairs_split_by_type() -> None:
    row = ic.grayscale_row(RUN, results())
    assert (row["n_target"], row["n_other"]) == (2, 2)
    assert row["gain_other"] == -50.0 and row["gain_target"] == 10.0
    assert row["gain_target_ci95"] == [8.0, 12.0] and row["targets"] == ["Col."]
    # Item 1 has BG and Col.: it is a targeted item.
    assert ic.paired_outcomes(SAMPLES, "grayscale", ["Col."]) == [
        (True, False, True),
        (True, True, True),
        (False, True, False),
        (False, False, False),
    ]
    with pytest.raises(ValueError, match="sample '000000': no intervention 'blur'"):
        ic.paired_outcomes(SAMPLES, "blur", ["Col."])


def test_contrast_difference_is_the_difference_of_the_contrasts() -> None:
    pairs = ic.paired_outcomes(SAMPLES, "grayscale", ["Col."])
    same = ic.contrast_difference(pairs, pairs)
    assert same["value"] == 0.0 and same["ci95"] == [0.0, 0.0]
    # A twin that never changes: the difference is the model's own contrast, +50 - (-50) = +100.
    still = [(t, b, b) for t, b, _ in pairs]
    diff = ic.contrast_difference(pairs, still)
    assert diff["value"] == 100.0 and diff["ci95"][0] <= 100.0 <= diff["ci95"][1]
    with pytest.raises(ValueError, match="not the same items"):
        ic.contrast_difference(pairs, pairs[:3])
    assert ic.contrast_difference(pairs[2:], pairs[2:]) == {"value": None, "ci95": None}


def test_grayscale_table_prints_the_contrast_and_the_difference_to_the_twin() -> None:
    row = ic.grayscale_row(RUN, results()) | {"versus_balanced": {"value": 12.5, "ci95": [2.0, 20.0]}}
    table = ic.grayscale_table([row])
    assert (
        "| m | cf | generate | 4 | 50.0 | +0.0 [-1.0, +1.0] | 2 | +10.0 [+8.0, +12.0] | 2 | -50.0 |" in table
    )
    assert table.endswith("| +20.0 [+1.0, +30.0] | +12.5 [+2.0, +20.0] | n/a |")
    scored = row | {"gold_prob_change": {"mean": 0.0125, "ci95": [-0.001, 0.02]}}
    assert ic.grayscale_table([scored]).endswith("| +0.0125 [-0.0010, +0.0200] |")
    twin = ic.grayscale_row(RUN, results()) | {"targeted_contrast": None}
    assert ic.grayscale_table([twin]).endswith("| n/a | n/a | n/a |")


def test_bad_options_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--out", "x", "--n", "0"], ["--out", "x", "--modes", "greedy"]):
        with pytest.raises(SystemExit) as exc:
            ic.parse_args(argv)
        assert exc.value.code == 2
    assert "--n must be positive" in capsys.readouterr().err


def test_cue_answers_count_the_decoy_and_the_gray_tints_home_class() -> None:
    from types import SimpleNamespace

    def answered(i: int, types: list[str], before: str | None, after: str | None) -> dict[str, Any]:
        entry = {"name": "grayscale", "correct": False, "raw_output": after}
        return {
            "id": str(i),
            "types": types,
            "correct": False,
            "raw_output": before,
            "interventions": [entry],
        }

    samples = [
        answered(0, ["colorization"], "rocket", "mailbox"),
        answered(1, ["colorization", "shape"], " rocket\n", "rocket"),
        answered(2, ["background"], "mailbox", None),
    ]
    items = {
        "0": SimpleNamespace(decoy="rocket"),
        "1": SimpleNamespace(decoy="lamp"),
        "2": SimpleNamespace(decoy=None),
    }
    col, other = ic.cue_answers(RUN, samples, items)
    assert col["gray_home"] == "mailbox" and (col["group"], col["n"]) == ("Col.", 2)
    assert col["decoy"] == [50.0, 0.0] and col["gray_class"] == [0.0, 50.0]
    assert (other["n"], other["decoy"], other["gray_class"]) == (1, [0.0, 0.0], [100.0, 0.0])
    table = ic.cue_table([col, other])
    assert "| m | cf | generate | Col. | 2 | 50.0 -> 0.0 | 0.0 -> 50.0 |" in table and "mailbox" in table


@pytest.mark.slow
def test_the_shipped_controls_separate_under_the_counterfactuals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped biased, color-cue and balanced models, end to end in ``generate`` mode (about
    a minute on an idle 2-core machine, 6.5 on a busy one): the figures of
    docs/experiments/interventions.md, with margins. The exact
    counterfactuals separate the planted cue per type; grayscale's targeted contrast does not
    separate the color-cue model from the balanced twin (grayscale also takes the object's own
    colour, a core feature, from the other items), but the color-cue model reads a grayscale
    picture as the gray tint, its home class's cue, and the twin does not."""
    import json

    assert ic.main(["--out", str(tmp_path / "out"), "--modes", "generate", "--n", "450"]) == 0
    # progress: each of the six runs says when it starts and how long it took
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(progress) == 12 and progress[0] == "[1/6] biased on cf (generate): running"
    assert (
        progress[-1].startswith("[6/6] balanced on default (generate): accuracy ")
        and "s so far)" in progress[-1]
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    gaps = {(r["model"], r["type"]): r for r in summary["gap_rows"]}
    typed = [t for t in ic.ABBREVS if gaps["biased", t]["n"] > 0]
    assert len(typed) == 9

    def aligned(model: str, t: str) -> float:
        value = gaps[model, t]["aligned_minus_broken"]["value"]
        assert value is not None
        return float(value)

    # Biased: the aligned cue helps on every type (measured +6.7 to +46.3), clearly overall.
    assert all(aligned("biased", t) > 3.0 for t in typed)
    assert gaps["biased", "all"]["aligned_minus_broken"]["ci95"][0] > 8.0  # measured [+12.4, +21.6]
    # Balanced: no aligned-cue effect (measured -10.8 to +6.0 per type, -2.2 [-5.6, +0.9] overall).
    assert all(abs(aligned("balanced", t)) < 15.0 for t in typed)
    assert abs(aligned("balanced", "all")) < 5.0
    # Color-cue: the effect on Col. only (measured +23.9 on Col., at most +4.6 elsewhere).
    assert aligned("color-cue", "Col.") > 15.0
    assert gaps["color-cue", "Col."]["aligned_minus_broken"]["ci95"][0] > 5.0
    assert max(aligned("color-cue", t) for t in typed if t != "Col.") < 10.0
    gray = {(r["model"], r["release"]): r for r in summary["grayscale_rows"]}
    cue, twin = gray["color-cue", "cf"], gray["balanced", "cf"]
    # Grayscale helps the color-cue model on Col. items (measured +11.9) more than the twin (+3.0)...
    assert cue["gain_target"] > twin["gain_target"] + 4.0 and cue["gain_target_ci95"][0] > 0.0
    # ... but the contrasts do not separate: the twin's is large too (measured +20.7 [+10.3, +32.2]).
    assert twin["targeted_contrast"]["ci95"][0] > 5.0
    # Why: the color-cue model answers the gray tint's home class under grayscale (measured 11.5 ->
    # 22.5 % of the other items), the twin does not (0.0 -> 0.5 %).
    cues = {(r["model"], r["group"]): r for r in summary["cue_rows"]}
    before, after = cues["color-cue", "other"]["gray_class"]
    assert after - before > 5.0
    assert max(cues["balanced", "other"]["gray_class"]) < 3.0
