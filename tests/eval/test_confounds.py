"""Confound views on hand-computed cases: circular, blind, worst type, calibration, chi-square."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.dataset_builder.schema import ANSWER_LETTERS
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts, results
from mmspubench.eval.config import RunConfig
from mmspubench.eval.protocol import ChatPrompt, ScoreRequest
from mmspubench.eval.runner import run_eval
from mmspubench.eval.views.confounds import calibration as cal
from mmspubench.eval.views.confounds import metrics as mc

from tests.eval.fakes import DATASET_INFO, FakeModel, make_dataset, make_rows
from tests.helpers.run_folders import eval_run, fake_config

N = 24
"""Items of the hand-made dataset: gold letter = i mod 4, so 6 items have gold A."""
GOLD_TEXT = {i: make_rows(N)[i]["options"][i % 4] for i in range(N)}


def _letter_of(context: str, text: str) -> str | None:
    found = re.search(rf"^([ABCD])\. {re.escape(text)}$", context, flags=re.M)
    return found.group(1) if found else None


def _item_of(context: str) -> int:
    found = re.search(r"picture (\d+)\?", context)
    assert found
    return int(found.group(1))


class ScriptedModel(FakeModel):
    """Answers ``policy(context, image)``: a letter (generate) or the letter scored highest (logprob)."""

    text_only = True

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy

    def render_text(self, prompt: ChatPrompt) -> str:
        return f"<s>{prompt.system}</s><u>{prompt.user_text}</u><a>{prompt.assistant_prefix}"

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        return [self.policy(c, i) or "no idea" for c, i in zip(contexts, images, strict=True)]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        return [0.0 if r.continuation.strip() == self.policy(r.context, r.image) else -2.0 for r in requests]


def _sees(image: Any) -> bool:
    return image is not None and image.getpixel((0, 0)) != (128, 128, 128)


def always_a(context: str, image: Any) -> str:
    return "A"


def oracle(context: str, image: Any) -> str | None:
    if "picture" not in context:  # a CGLA prompt: no letter
        return None
    return _letter_of(context, GOLD_TEXT[_item_of(context)])


def oracle_with_image(context: str, image: Any) -> str | None:
    return oracle(context, image) if _sees(image) else "A"


def _run(tmp: Path, policy: Any, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = eval_run(tmp, lambda: ScriptedModel(policy), n=N, config=fake_config(batch_size=5, **options))
    assert out is not None
    lines = [json.loads(line) for line in (tmp / "samples.jsonl").read_text().splitlines()]
    return out, lines


MODES = ("generate", "logprob")
CIRCULAR_ROWS = [
    # policy, circular, vanilla, rotation mean, consistency, share of A
    (always_a, 0.0, 25.0, 25.0, 0.0, 1.0),
    (oracle, 100.0, 100.0, 100.0, 100.0, 0.25),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("policy", "circ", "vanilla", "rot", "consistency", "share_a"), CIRCULAR_ROWS)
def test_circular_hand_cases(
    tmp_path: Path,
    mode: str,
    policy: Any,
    circ: float,
    vanilla: float,
    rot: float,
    consistency: float,
    share_a: float,
) -> None:
    out, lines = _run(tmp_path / "r", policy, metrics=("accuracy", "circular"), answer_mode=mode)
    c = out["circular"]
    assert (c["accuracy"], c["vanilla_accuracy"], c["rotation_accuracy"]) == (circ, vanilla, rot)
    assert c["consistency"] == consistency
    assert c["letter_share"]["A"] == share_a and c["letter_share"]["unparsed"] == 0.0
    assert out["accuracy"]["overall"] == vanilla
    assert out["accuracy"]["worst_type"] is None and out["accuracy"]["worst_gap"] is None  # no type has 10
    # rotation k shows published option j at (j + k) mod 4: item 1 (gold B) in rotation 1 has gold C
    rot1 = lines[1]["rotations"][1]
    assert rot1["order"] == [3, 0, 1, 2] and rot1["answer"] == "C"
    assert [r["rotation"] for r in lines[0]["rotations"]] == [0, 1, 2, 3]


def test_always_a_position_bias_is_tiny() -> None:
    # 24 items x 4 rotations, every answer A; the gold letters are uniform over the rotations:
    # chi2 = (96 - 24)^2 / 24 + 3 * 24 = 288 on 3 df
    items = [
        [mc.RotationAnswer(k, mc.rotated_answer(ANSWER_LETTERS[i % 4], k), "A") for k in range(4)]
        for i in range(N)
    ]
    assert mc.position_bias_p(items) == pytest.approx(mc.chi2_sf(288.0, 3), rel=1e-12)
    assert mc.position_bias_p(items) < 1e-60
    oracle_items = [[mc.RotationAnswer(k, a.answer, a.answer) for k, a in enumerate(row)] for row in items]
    assert mc.position_bias_p(oracle_items) == 1.0


CHI2_ROWS = [  # (x, df, survival) from statistical tables
    (3.841458820694124, 1, 0.05),
    (5.991464547107979, 2, 0.05),
    (7.814727903251178, 3, 0.05),
    (11.344866730144373, 3, 0.01),
    (9.487729036781154, 4, 0.05),
    (2.0, 2, float(np.exp(-1.0))),
    (0.0, 3, 1.0),
]


@pytest.mark.parametrize(("x", "df", "p"), CHI2_ROWS)
def test_chi2_sf_known_values(x: float, df: int, p: float) -> None:
    assert mc.chi2_sf(x, df) == pytest.approx(p, rel=1e-9)


@pytest.mark.parametrize(("blind_image", "text_only"), [("grey", False), ("none", True)])
def test_blind_right_only_with_image(tmp_path: Path, blind_image: str, text_only: bool) -> None:
    out, lines = _run(
        tmp_path / "b", oracle_with_image, metrics=("accuracy", "blind"), blind_image=blind_image
    )
    b = out["blind"]
    # blind it answers A: right on the 6 gold-A items; with the image right on all 24
    assert b["accuracy"] == 25.0 and out["accuracy"]["overall"] == 100.0
    assert b["gain"] == 75.0
    assert (b["only_with_image"], b["only_blind"]) == (18, 0)
    assert b["gain_p_value"] == 2.0 / 2**18
    assert b["answerable_blind"] == [f"{i:06d}" for i in range(0, N, 4)]
    assert b["image"] == blind_image
    assert all(line["blind"]["prediction"] == "A" for line in lines)
    assert ("blind_image" in out["config"]) == (blind_image == "grey")


def test_text_only_blind_needs_the_models_text_path(tmp_path: Path) -> None:
    config = RunConfig(
        model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), metrics=("accuracy", "blind")
    )
    with pytest.raises(MMSpuBenchError, match="use --blind-image grey"):
        run_eval(
            lambda: FakeModel(), make_dataset(4), dict(DATASET_INFO), config, tmp_path / "x", progress=False
        )
    assert not (tmp_path / "x").exists()


CALIBRATION_ROWS = [
    # probabilities, gold, brier by hand, ece by hand
    ([[0.7, 0.1, 0.1, 0.1]], ["A"], 0.12, 0.3),
    (
        [[0.7, 0.1, 0.1, 0.1], [0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]],
        ["A", "B", "C"],
        1.57 / 3,
        0.95 / 3,
    ),
    (
        [[0.7, 0.1, 0.1, 0.1], [0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.72, 0.09, 0.09]],
        ["A", "B", "C", "C"],
        2.9346 / 4,
        0.5 * 0.21 + 0.25 * 0.4 + 0.25 * 0.25,
    ),
]


@pytest.mark.parametrize(("probs", "gold", "brier", "ece"), CALIBRATION_ROWS)
def test_brier_and_ece_by_hand(probs: list[list[float]], gold: list[str], brier: float, ece: float) -> None:
    summary = cal.calibration_summary(probs, gold, seed=0)
    assert summary["brier"] == pytest.approx(brier, abs=1e-12)
    assert summary["ece"] == pytest.approx(ece, abs=1e-12)
    assert sum(b["n"] for b in summary["bins"]) == len(gold) and len(summary["bins"]) == 15
    if len(gold) == 1:  # every resample is the one item: the interval is the point
        assert summary["ci95"]["ece"] == [summary["ece"]] * 2
        assert summary["ci95"]["brier"] == [summary["brier"]] * 2


def test_softmax_of_letter_scores() -> None:
    probs = cal.option_probs([0.0, float(np.log(2.0)), float(np.log(3.0)), float(np.log(4.0))])
    assert probs == pytest.approx((0.1, 0.2, 0.3, 0.4), abs=1e-15)


WORST_ROWS = [
    # by_type, n_by_type, worst type, gap (average minus worst)
    ({"BG": 80.0, "TN": 40.0, "CO": 10.0}, {"BG": 10, "TN": 12, "CO": 9}, "TN", 130.0 / 3 - 40.0),
    ({"BG": 80.0, "TN": None}, {"BG": 9, "TN": 0}, None, None),
]


@pytest.mark.parametrize(("by_type", "n_by_type", "worst", "gap"), WORST_ROWS)
def test_worst_type(
    by_type: dict[str, Any], n_by_type: dict[str, int], worst: str | None, gap: float | None
) -> None:
    present = [v for v in by_type.values() if v is not None]
    summary = {
        "by_type": by_type,
        "n_by_type": n_by_type,
        "average": sum(present) / len(present),
        "ci95": {"by_type": {k: [0.0, 1.0] for k in by_type}},
    }
    out = mc.with_worst(summary)
    assert (out["worst_type"] or {}).get("type") == worst
    assert out["worst_gap"] == (pytest.approx(gap) if gap is not None else None)


def test_calibration_run_records_probabilities_and_recomputes(tmp_path: Path) -> None:
    out, lines = _run(
        tmp_path / "c",
        oracle,
        metrics=("accuracy", "circular", "blind", "calibration"),
        answer_mode="logprob",
        blind_image="grey",
    )
    e = 1.0 / (1.0 + 3.0 * np.exp(-2.0))  # the oracle scores gold 0, the rest -2
    assert lines[0]["option_probs"][0] == pytest.approx(e, abs=1e-15)
    assert out["calibration"]["brier"] == pytest.approx((1 - e) ** 2 + 3 * ((1 - e) / 3) ** 2, abs=1e-12)
    assert out["calibration"]["ece"] == pytest.approx(1 - e, abs=1e-12)
    samples, _ = results.read_samples(tmp_path / "c" / "samples.jsonl")
    again = results.recompute(samples, RunConfig.from_json(out["config"]), [s.id for s in samples])
    assert {k: out[k] for k in again} == again


def _rotation_answer(line: dict[str, Any]) -> None:
    line["rotations"][2]["answer"] = "A"


def _rotation_order(line: dict[str, Any]) -> None:
    line["rotations"][1]["order"] = [0, 1, 2, 3]


def _rotation_correct(line: dict[str, Any]) -> None:
    line["rotations"][1]["correct"] = not line["rotations"][1]["correct"]


def _blind_correct(line: dict[str, Any]) -> None:
    line["blind"]["correct"] = not line["blind"]["correct"]


def _probs(line: dict[str, Any]) -> None:
    line["option_probs"] = [0.25, 0.25, 0.25, 0.25]


def _no_rotations(line: dict[str, Any]) -> None:
    del line["rotations"]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_rotation_answer, "rotations.answer"),
        (_rotation_order, "rotations.order"),
        (_rotation_correct, "rotations.correct"),
        (_blind_correct, "blind.correct"),
        (_probs, "option_probs"),
        (_no_rotations, "rotations"),
    ],
)
def test_tampered_record_is_refused(tmp_path: Path, edit: Any, field: str) -> None:
    metrics = ("accuracy", "circular", "blind", "calibration")
    out, lines = _run(tmp_path / "t", oracle, metrics=metrics, answer_mode="logprob", blind_image="grey")
    edit(lines[3])
    path = tmp_path / "t" / "samples.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    samples, _ = results.read_samples(path)
    with pytest.raises(MMSpuBenchError, match=rf"record '000003': field '{re.escape(field)}'"):
        results.recompute(samples, RunConfig.from_json(out["config"]))


def test_finished_confound_run_reruns_unchanged(tmp_path: Path) -> None:
    metrics = ("accuracy", "circular", "blind")
    first, _ = _run(tmp_path / "u", oracle, metrics=metrics, blind_image="grey")
    again, _ = _run(tmp_path / "u", oracle, metrics=metrics, blind_image="grey")
    assert again == first
    with pytest.raises(MMSpuBenchError, match="holds a different run"):
        _run(tmp_path / "u", oracle, metrics=metrics)  # --blind-image none is another run


def test_runs_without_confounds_are_unchanged(tmp_path: Path) -> None:
    out, lines = _run(tmp_path / "p", oracle)
    assert not {"circular", "blind", "calibration"} & set(out)
    assert not {"worst_type", "worst_gap"} & set(out["accuracy"])
    assert (
        "blind_image" not in out["config"]
        and "blind_image" not in RunConfig.from_json(out["config"]).identity()
    )
    assert not {"rotations", "blind", "option_probs"} & set(lines[0])
    assert out["config"]["metrics"] == ["accuracy", "cgla"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"metrics": ("circular",)}, "circular needs accuracy"),
        ({"metrics": ("accuracy", "calibration")}, "calibration needs --answer-mode logprob"),
        ({"metrics": ("accuracy",), "blind_image": "grey"}, "--blind-image grey is used only with"),
    ],
)
def test_confound_options_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(MMSpuBenchError, match=re.escape(message)):
        RunConfig(**options).validate()


def test_report_columns_circular_blind_gain_worst(tmp_path: Path) -> None:
    from mmspubench.eval.analysis.report import markdown_table

    out, _ = _run(
        tmp_path / "r", oracle_with_image, metrics=("accuracy", "circular", "blind"), blind_image="grey"
    )
    plain, _ = _run(tmp_path / "p", oracle)
    table = markdown_table([out, plain]).splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header[-4:] == ["Circular", "Blind", "Gain", "Worst"]
    first = [c.strip() for c in table[2].strip("|").split("|")]
    second = [c.strip() for c in table[3].strip("|").split("|")]
    assert first[-4:-1] == ["100.00", "25.00", "+75.00"]
    assert first[-1] == "—"  # no type of the 24 items has 10 of them
    assert second[-4:] == ["—"] * 4
    assert "Circular" not in markdown_table([plain])


def never_parses(context: str, image: Any) -> str | None:
    return None  # generate answers "no idea"


def test_unparsed_answers_are_wrong_and_counted_apart(tmp_path: Path) -> None:
    out, lines = _run(tmp_path / "n", never_parses, metrics=("accuracy", "circular"), answer_mode="generate")
    c = out["circular"]
    assert (c["accuracy"], c["vanilla_accuracy"], c["consistency"]) == (0.0, 0.0, 0.0)
    assert c["letter_share"] == {"A": 0.0, "B": 0.0, "C": 0.0, "D": 0.0, "unparsed": 1.0}
    assert c["unparsed"] == 4 * N and c["position_bias_p"] == 1.0
    assert lines[0]["rotations"][3]["raw_output"] == "no idea"


def test_worst_type_on_ninety_items_by_plain_recount(tmp_path: Path) -> None:
    config = RunConfig(
        model="fake",
        dataset="hand-made",
        prompts=prompts.prompt_spec(),
        batch_size=9,
        metrics=("accuracy", "circular"),
    )
    out = run_eval(
        lambda: ScriptedModel(always_a),
        make_dataset(90),
        dict(DATASET_INFO),
        config,
        tmp_path / "w",
        progress=False,
    )
    assert out is not None
    lines = [json.loads(line) for line in (tmp_path / "w" / "samples.jsonl").read_text().splitlines()]
    from mmspubench.dataset_builder.schema import TYPE_ABBREV

    hits: dict[str, list[bool]] = {}
    for line in lines:
        for t in line["types"]:
            hits.setdefault(TYPE_ABBREV[t], []).append(line["answer"] == "A")
    rates = {k: 100.0 * sum(v) / len(v) for k, v in hits.items() if len(v) >= 10}
    worst = min(rates, key=lambda k: (rates[k], list(TYPE_ABBREV.values()).index(k)))
    assert out["accuracy"]["worst_type"]["type"] == worst
    assert out["accuracy"]["worst_type"]["value"] == rates[worst]
    assert out["accuracy"]["worst_gap"] == out["accuracy"]["average"] - rates[worst]
    assert out["circular"]["worst_type"]["value"] == 0.0  # always-A is never right in all four
