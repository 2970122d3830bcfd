"""The interventions view: options, what each item is asked, the records, and hand-computed figures."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, TYPE_NAMES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import interventions, prompts, results
from mmspubench.eval.config import RunConfig, with_options
from mmspubench.eval.intervention_names import BUILTIN_NAMES, expected_names, parse_names
from mmspubench.eval.protocol import ScoreRequest
from mmspubench.eval.records import SampleResult
from mmspubench.eval.runner import run_eval
from mmspubench.eval.views.confounds.paired import mcnemar_exact
from mmspubench.eval.views.interventions import arithmetic as metrics_interventions

from tests.eval.fakes import DATASET_INFO, FakeModel, make_dataset, make_rows
from tests.helpers.run_folders import eval_run, fake_config

N = 18
ROWS = make_rows(N)
COL = {i for i, r in enumerate(ROWS) if TYPE_NAMES.index("colorization") in r["spurious_types"]}
GOLD = {i: ANSWER_LETTERS[i % 4] for i in range(N)}


def _item_of(context: str) -> int:
    found = re.search(r"picture (\d+)\?", context)
    assert found
    return int(found.group(1))


def _grey(image: Any) -> bool:
    r, g, b = image.getpixel((0, 0))
    return bool(r == g == b)


COLOURED = {i for i in COL if not _grey(ROWS[i]["image"])}
"""The Col. items whose published image is in colour (item 0's is black): the ones answered wrong."""


def colour_policy(context: str, image: Any) -> str:
    """Right unless the item is a Col. item shown in colour (then the next letter)."""
    i = _item_of(context)
    if i in COL and not _grey(image):
        return ANSWER_LETTERS[(i + 1) % 4]
    return GOLD[i]


class ColourModel(FakeModel):
    """Relies on colour on Col. items only: grayscale fixes exactly those."""

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        self.generate_calls.append(len(contexts))
        return [colour_policy(c, i) for c, i in zip(contexts, images, strict=True)]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        self.score_calls.append(len(requests))
        out = []
        for r in requests:
            if "picture" in r.context:  # a letter of the multiple-choice prompt
                out.append(0.0 if r.continuation.strip() == colour_policy(r.context, r.image) else -2.0)
            else:  # CGL: the grey image makes every condition 1 nat likelier
                out.append((-1.0 if _grey(r.image) else -2.0) - 0.1 * len(r.context) % 7)
        return out


def _run(
    tmp_path: Path, model: Any = None, n: int = N, dataset: Any = None, **options: Any
) -> dict[str, Any]:
    config = fake_config(batch_size=4, **options).validate()
    out = eval_run(tmp_path / "run", lambda: model or ColourModel(), n=n, dataset=dataset, config=config)
    assert out is not None
    return out


def _samples(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------ options


def test_default_is_every_builtin_and_other_runs_record_nothing() -> None:
    config = with_options(None, {"metrics": "accuracy,interventions"})
    assert config.interventions == BUILTIN_NAMES == ("grayscale", "blur", "equalize", "noise")
    assert config.to_json()["interventions"] == list(BUILTIN_NAMES)
    plain = with_options(None, {"metrics": "accuracy,cgla"})
    assert "interventions" not in plain.to_json() and "interventions" not in plain.identity()
    assert RunConfig.from_json(config.to_json()).interventions == BUILTIN_NAMES


def test_names_keep_their_order() -> None:
    assert parse_names("noise, cf:cue-aligned ,grayscale") == ("noise", "cf:cue-aligned", "grayscale")
    assert parse_names("cf:*") == ("cf:*",)


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"metrics": "accuracy,interventions", "interventions": "greyscale"}, "did you mean grayscale"),
        ({"metrics": "accuracy,interventions", "interventions": "blur,blur"}, "given twice"),
        ({"metrics": "accuracy,interventions", "interventions": "cf:*,cf:cue-aligned"}, "drop the cf:NAME"),
        ({"metrics": "accuracy,interventions", "interventions": "cf:Cue Aligned"}, "lower-case letters"),
        ({"metrics": "accuracy,interventions", "interventions": "cf:"}, "lower-case letters"),
        ({"metrics": "accuracy,interventions", "interventions": "blur,,noise"}, "name 2 is empty"),
        ({"metrics": "accuracy,interventions", "interventions": ",".join(["cf:x"] * 2)}, "given twice"),
        ({"metrics": "accuracy", "interventions": "blur"}, "used only with --metrics ...,interventions"),
        ({"metrics": "cgla,interventions"}, "interventions needs accuracy"),
        (
            {"metrics": "accuracy,interventions", "interventions": [f"cf:n{i}" for i in range(33)]},
            "at most 32",
        ),
    ],
)
def test_bad_interventions_are_one_line(options: dict[str, Any], needle: str) -> None:
    with pytest.raises(MMSpuBenchError, match=re.escape(needle)):
        with_options(None, options)


def test_expected_names_expand_cf_all_and_name_a_missing_counterfactual() -> None:
    assert expected_names(("grayscale", "cf:*"), ["cue-aligned", "x"]) == (
        "grayscale",
        "cf:cue-aligned",
        "cf:x",
    )
    assert expected_names(("cf:*",), []) == ()
    why = expected_names(("cf:cue-removed",), ["cue-aligned"])
    assert isinstance(why, str) and "'cue-removed'" in why and "cue-aligned" in why


# ------------------------------------------------------------------ the run


def test_each_item_is_asked_under_each_intervention_with_its_digest(tmp_path: Path) -> None:
    out = _run(tmp_path, metrics=("accuracy", "interventions"), interventions=("grayscale", "noise"))
    samples = _samples(tmp_path)
    rows = make_rows(N)
    for sample, row in zip(samples, rows, strict=True):
        names = [e["name"] for e in sample["interventions"]]
        assert names == ["grayscale", "noise"]
        for entry in sample["interventions"]:
            image, digest = interventions.apply(entry["name"], row["image"])
            assert entry["digest"] == digest
            assert entry["targets"] == list(interventions.INTERVENTIONS[entry["name"]].targets)
            assert entry["prediction"] == colour_policy(f"picture {int(sample['id'])}?", image)
            assert entry["cgls"] is None and entry["cgla_min"] is None
    assert out["interventions"]["names"] == ["grayscale", "noise"]


def test_grayscale_figures_by_hand(tmp_path: Path) -> None:
    """Vanilla: wrong exactly on the coloured Col. items; grayscale: all right. So the change is +100
    points on those and 0 elsewhere, the flip rate their share; the targeted contrast is the Col.
    items' change (every other item's is 0)."""
    out = _run(tmp_path, metrics=("accuracy", "interventions"), interventions=("grayscale",))
    assert COLOURED and len(COLOURED) < len(COL) < N
    g = out["interventions"]["by_intervention"]["grayscale"]
    share = 100.0 * len(COLOURED) / N
    on_col = 100.0 * len(COLOURED) / len(COL)
    assert out["accuracy"]["overall"] == pytest.approx(100.0 - share)
    assert g["accuracy"]["overall"] == 100.0
    assert g["change"]["gain"] == pytest.approx(share)
    assert g["change"]["only_intervened"] == len(COLOURED) and g["change"]["only_vanilla"] == 0
    assert g["change"]["mcnemar_p"] == pytest.approx(2 * 0.5 ** len(COLOURED))
    assert g["change"]["by_type"]["Col."] == pytest.approx(on_col)
    assert g["flip_rate"] == pytest.approx(share)
    contrast = g["targeted_contrast"]
    assert contrast["value"] == pytest.approx(on_col) and contrast["other_change"] == 0.0
    assert (
        contrast["ci95"][0] > 0 and contrast["n_targeted"] == len(COL) and contrast["n_other"] == N - len(COL)
    )
    assert g["targets"] == ["Col."] and g["n"] == N
    assert g["gold_prob_change"] is None and g["cgla"] is None


def test_logprob_gold_probability_change_and_cgla_under_the_intervention(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        metrics=("accuracy", "cgla", "interventions"),
        interventions=("grayscale",),
        answer_mode="logprob",
    )
    g = out["interventions"]["by_intervention"]["grayscale"]
    # Scores 0 for the chosen letter, -2 for the others: p = e^0 / (e^0 + 3 e^-2) when gold is chosen.
    high, low = 1 / (1 + 3 * np.exp(-2)), np.exp(-2) / (1 + 3 * np.exp(-2))
    assert g["gold_prob_change"]["mean"] == pytest.approx(len(COLOURED) / N * (high - low))
    samples = [SampleResult.from_json(s) for s in _samples(tmp_path)]
    for s in samples:
        assert s.interventions is not None
        (entry,) = s.interventions
        assert entry.cgls is not None and len(entry.cgls) == len(s.conditions)
        # the fake's grey image adds 1 nat to every condition (0 where the item's is grey already)
        step = 0.0 if _grey(ROWS[int(s.id)]["image"]) else 1.0
        deltas = [a - c.cgl for a, c in zip(entry.cgls, s.conditions, strict=True)]
        assert deltas == pytest.approx([step] * len(entry.cgls))
        assert entry.cgla_min == pytest.approx(s.cgla_min)
    assert g["cgla"]["change"] == 0.0


def test_cgla_under_an_intervention_is_the_plain_cgla_of_the_changed_image(tmp_path: Path) -> None:
    """The CGLs recorded for an intervention are those of scoring the item's conditions with the
    changed image, exactly as the published image's are scored."""
    _run(tmp_path, model=FakeModel(), metrics=("accuracy", "cgla", "interventions"), interventions=("blur",))
    rows = make_rows(N)
    model = FakeModel()
    for sample, row in zip(_samples(tmp_path), rows, strict=True):
        image, _ = interventions.apply("blur", row["image"])
        plain = model.score(
            [ScoreRequest(image, c["prompt"], c["continuation"]) for c in sample["conditions"]]
        )
        assert sample["interventions"][0]["cgls"] == plain


def test_other_runs_write_no_intervention_key(tmp_path: Path) -> None:
    out = _run(tmp_path, model=FakeModel(), metrics=("accuracy", "cgla"))
    assert "interventions" not in out and "interventions" not in out["config"]
    assert all("interventions" not in s for s in _samples(tmp_path))


def test_one_chunk_is_one_generate_call(tmp_path: Path) -> None:
    model = ColourModel()
    _run(tmp_path, model=model, n=4, metrics=("accuracy", "interventions"))
    assert model.generate_calls == [4 * (1 + len(BUILTIN_NAMES))]


# ------------------------------------------------------------------ counterfactuals


def _with_counterfactuals(n: int, names: Sequence[str], skip: int | None = None) -> Any:
    import datasets
    from mmspubench.dataset_builder.schema import FEATURES_WITH_COUNTERFACTUALS
    from PIL import Image

    rows = make_rows(n)
    for i, row in enumerate(rows):
        row["counterfactuals"] = [
            {
                "image": Image.new("RGB", (16, 16), (k * 40, k * 40, k * 40)),
                "name": name,
                "targets": list(row["spurious_types"]),
                "description": f"{name} of {i}",
            }
            for k, name in enumerate(names)
            if i != skip
        ]
    return datasets.Dataset.from_list(rows, features=FEATURES_WITH_COUNTERFACTUALS)


def test_cf_all_asks_each_items_own_and_names_the_twin_gaps(tmp_path: Path) -> None:
    data = _with_counterfactuals(8, ["cue-aligned", "cue-removed"], skip=3)
    out = _run(tmp_path, dataset=data, metrics=("accuracy", "interventions"), interventions=("cf:*",))
    samples = _samples(tmp_path)
    assert [len(s["interventions"]) for s in samples] == [2, 2, 2, 0, 2, 2, 2, 2]
    section = out["interventions"]
    assert section["names"] == ["cf:cue-aligned", "cf:cue-removed"]
    assert section["by_intervention"]["cf:cue-aligned"]["n"] == 7
    # grey counterfactuals: every Col. item among the seven gains
    gap = section["counterfactual_gaps"]["aligned_minus_broken"]
    assert gap == section["by_intervention"]["cf:cue-aligned"]["change"]
    assert gap["gain"] == pytest.approx(100.0 * len(COLOURED & {0, 1, 2, 4, 5, 6, 7}) / 7)
    assert section["by_intervention"]["cf:cue-aligned"]["targeted_contrast"] is None  # every item targeted


def test_cf_name_an_item_lacks_names_the_record(tmp_path: Path) -> None:
    data = _with_counterfactuals(6, ["cue-aligned"], skip=2)
    with pytest.raises(
        MMSpuBenchError,
        match=r"record '000002': field 'counterfactuals': has no counterfactual 'cue-aligned'",
    ):
        _run(tmp_path, dataset=data, metrics=("accuracy", "interventions"), interventions=("cf:cue-aligned",))
    assert not (tmp_path / "run").exists()


def test_cf_on_a_dataset_without_counterfactuals_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    def load() -> Any:
        raise AssertionError("the model must not load")

    config = RunConfig(
        model="fake",
        dataset="hand-made",
        prompts=prompts.prompt_spec(),
        metrics=("accuracy", "interventions"),
        interventions=("cf:cue-aligned",),
    ).validate()
    with pytest.raises(MMSpuBenchError, match="needs counterfactual images"):
        run_eval(load, make_dataset(4), dict(DATASET_INFO), config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ recomputation refuses edits


def _edited(tmp_path: Path, edit: Any, **options: Any) -> str:
    out = _run(
        tmp_path, metrics=("accuracy", "interventions"), interventions=("grayscale", "blur"), **options
    )
    lines = _samples(tmp_path)
    edit(lines[1])
    samples = [SampleResult.from_json(s) for s in lines]
    config = RunConfig.from_json(out["config"])
    with pytest.raises(MMSpuBenchError) as err:
        results.recompute(samples, config)
    return str(err.value)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda s: s["interventions"].reverse(), "expected 'grayscale'"),
        (lambda s: s["interventions"].pop(), "expected 'blur'"),
        (
            lambda s: s["interventions"].append(dict(s["interventions"][0], name="noise")),
            "is not an intervention of the run",
        ),
        (lambda s: s.pop("interventions"), "missing in an interventions run"),
        (
            lambda s: s["interventions"][0].update(correct=not s["interventions"][0]["correct"]),
            "does not follow",
        ),
        (lambda s: s["interventions"][0].update(prediction="e"), "is not A, B, C, D or null"),
        (lambda s: s["interventions"][0].update(digest="abc"), "is not a SHA-256 hex digest"),
        (lambda s: s["interventions"][0].update(targets=["background"]), "expected ['colorization']"),
        (lambda s: s["interventions"][0].update(targets=["nope"]), "are not distinct type names"),
        (lambda s: s["interventions"][0].update(cgls=[1.0]), "set, but the run did not compute CGLA"),
    ],
)
def test_recompute_refuses_an_edited_entry(tmp_path: Path, edit: Any, needle: str) -> None:
    assert needle in _edited(tmp_path, edit)


def test_an_entry_with_an_unknown_key_is_not_a_record(tmp_path: Path) -> None:
    _run(tmp_path, metrics=("accuracy", "interventions"), interventions=("grayscale",))
    line = _samples(tmp_path)[0]
    line["interventions"][0]["extra"] = 1
    with pytest.raises(ValueError, match="unknown key 'extra'"):
        SampleResult.from_json(line)
    line["interventions"] = {"grayscale": {}}
    with pytest.raises(TypeError, match="must be a list of objects"):
        SampleResult.from_json(line)


def test_forged_cgla_under_an_intervention_is_refused(tmp_path: Path) -> None:
    out = _run(tmp_path, metrics=("accuracy", "cgla", "interventions"), interventions=("grayscale",))
    lines = _samples(tmp_path)
    lines[0]["interventions"][0]["cgla_min"] += 1.0
    config = RunConfig.from_json(out["config"])
    with pytest.raises(MMSpuBenchError, match="does not follow from its cgls"):
        results.recompute([SampleResult.from_json(s) for s in lines], config)
    lines = _samples(tmp_path)
    lines[0]["interventions"][0]["cgls"] = lines[0]["interventions"][0]["cgls"][:-1]
    with pytest.raises(MMSpuBenchError, match="expected one per condition"):
        results.recompute([SampleResult.from_json(s) for s in lines], replace(config))


# ------------------------------------------------------------------ the statistics by hand


def test_paired_change_by_hand() -> None:
    types = [("background",), ("background",), ("colorization",), ("colorization", "background")]
    change = metrics_interventions.paired_change(
        types, [True, False, True, False], [True, True, False, True], 0
    )
    assert change["gain"] == 25.0
    assert (change["only_vanilla"], change["only_intervened"]) == (1, 2)
    assert change["mcnemar_p"] == mcnemar_exact(1, 2) == 1.0
    assert change["by_type"]["BG"] == pytest.approx(100 * 2 / 3)
    assert change["by_type"]["Col."] == 0.0 and change["by_type"]["TN"] is None


def test_flip_rate_counts_unparsed_as_an_answer() -> None:
    rate, by_type = metrics_interventions.flip_rates(
        [("background",)] * 4, ["A", None, None, "B"], ["A", None, "C", "C"]
    )
    assert rate == 50.0 and by_type["BG"] == 50.0 and by_type["TN"] is None


def test_targeted_contrast_by_hand() -> None:
    targeted = [True, True, False, False, False]
    vanilla = [False, False, True, True, False]
    changed = [True, False, True, False, False]
    c = metrics_interventions.targeted_contrast(targeted, vanilla, changed, 0)
    assert c is not None
    assert c["targeted_change"] == 50.0 and c["other_change"] == pytest.approx(-100 / 3)
    assert c["value"] == pytest.approx(50 + 100 / 3)
    assert c["ci95"][0] <= c["value"] <= c["ci95"][1]
    assert metrics_interventions.targeted_contrast([True, True], [True, False], [True, True], 0) is None


def test_gold_probability_by_hand() -> None:
    scores = [0.0, float(np.log(3.0)), 0.0, 0.0]
    assert metrics_interventions.gold_prob(scores, "B") == pytest.approx(3 / 6)
    change = metrics_interventions.gold_prob_change([[0.0] * 4], [[0.0, np.log(3.0), 0.0, 0.0]], ["B"], 0)
    assert change["mean"] == pytest.approx(0.5 - 0.25)


# ------------------------------------------------------------------ stand-in models


class PolicyModel(FakeModel):
    """Answers ``policy(context, image)`` in both modes (the chosen letter scores 0, the others -2)."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy

    def generate(self, images: Sequence[Any], contexts: Sequence[str], max_new_tokens: int) -> list[str]:
        return [self.policy(c, i) for c, i in zip(contexts, images, strict=True)]

    def score(self, requests: Sequence[ScoreRequest]) -> list[float]:
        return [0.0 if r.continuation.strip() == self.policy(r.context, r.image) else -2.0 for r in requests]


STAND_INS = {
    "always-A": lambda context, image: "A",
    "oracle": lambda context, image: GOLD[_item_of(context)],
    "ignores the image": lambda context, image: ANSWER_LETTERS[len(context) % 4],
}


@pytest.mark.parametrize("mode", ["generate", "logprob"])
@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_a_model_that_does_not_read_the_image_moves_under_no_intervention(
    tmp_path: Path, name: str, mode: str
) -> None:
    """Always-A, the oracle and a model answering from the text alone give the same answer to every
    image: no change, no flip, no contrast, no change of the gold probability, on every intervention."""
    out = _run(
        tmp_path, model=PolicyModel(STAND_INS[name]), metrics=("accuracy", "interventions"), answer_mode=mode
    )
    vanilla = out["accuracy"]["overall"]
    assert name != "oracle" or vanilla == 100.0
    assert name != "always-A" or vanilla == pytest.approx(100.0 * sum(g == "A" for g in GOLD.values()) / N)
    for figures in out["interventions"]["by_intervention"].values():
        assert figures["accuracy"]["overall"] == pytest.approx(vanilla)
        assert figures["change"]["gain"] == 0.0 and figures["change"]["ci95"] == [0.0, 0.0]
        assert figures["change"]["mcnemar_p"] == 1.0
        assert figures["flip_rate"] == 0.0
        contrast = figures["targeted_contrast"]
        assert contrast is not None and contrast["value"] == 0.0
        gold = figures["gold_prob_change"]
        assert (gold is None) == (mode == "generate") and (gold is None or gold["mean"] == 0.0)


def test_a_model_reading_only_colour_moves_under_grayscale_only_on_col_items(tmp_path: Path) -> None:
    """The colour-reading model: grayscale's contrast is positive; blur and equalize keep a flat
    image as it is and move nothing; noise colours the one grey Col. image (item 0's black) and
    flips exactly that item."""
    out = _run(tmp_path, metrics=("accuracy", "interventions"))
    by = out["interventions"]["by_intervention"]
    assert by["grayscale"]["targeted_contrast"]["value"] > 50.0
    for name in ("blur", "equalize"):
        assert by[name]["flip_rate"] == 0.0, name
    assert by["noise"]["flip_rate"] == pytest.approx(100.0 * len(COL - COLOURED) / N)
    assert by["noise"]["change"]["by_type"]["Col."] == pytest.approx(-100.0 * len(COL - COLOURED) / len(COL))
