"""Attacks on the interventions view's core: options, records, recomputation, submit, run folder, dataset.

Each case is bad input that must be refused in one line naming the field (or, for the run folder and
the dataset, before anything is written), or a run that must come out the same.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import prompts, results
from mmspubench.eval.config import RunConfig, with_options
from mmspubench.eval.records import SampleResult
from mmspubench.eval.runner import run_eval
from mmspubench.eval.submit.checks import check_sample_consistency

from tests.eval.fakes import DATASET_INFO, FakeModel, make_rows
from tests.helpers.run_folders import eval_run

N = 10
METRICS = ("accuracy", "cgla", "interventions")
Row = dict[str, Any]


def _cf(row: Row, name: str, **change: Any) -> dict[str, Any]:
    from PIL import Image

    entry = {
        "image": Image.new("RGB", row["image"].size, (90, 90, 90)),
        "name": name,
        "targets": list(row["spurious_types"]),
        "description": f"{name} of {row['id']}",
    }
    return {**entry, **change}


def _dataset(n: int = N, edit: Callable[[int, Row], list[dict[str, Any]]] | None = None) -> Any:
    import datasets
    from mmspubench.dataset_builder.schema import FEATURES_WITH_COUNTERFACTUALS

    rows = make_rows(n)
    for i, row in enumerate(rows):
        row["counterfactuals"] = edit(i, row) if edit else [_cf(row, "cue-aligned"), _cf(row, "cue-removed")]
    return datasets.Dataset.from_list(rows, features=FEATURES_WITH_COUNTERFACTUALS)


def _config(**options: Any) -> RunConfig:
    values: dict[str, Any] = {"metrics": METRICS, "interventions": ("grayscale", "cf:*"), **options}
    return RunConfig(
        model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), batch_size=4, **values
    ).validate()


def _run(out: Path, dataset: Any = None, **options: Any) -> dict[str, Any]:
    got = eval_run(out, dataset=dataset if dataset is not None else _dataset(), config=_config(**options))
    assert got is not None
    return got


@pytest.fixture(scope="module")
def logprob_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], RunConfig]:
    out = tmp_path_factory.mktemp("attacks") / "run"
    got = _run(out, answer_mode="logprob")
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return lines, RunConfig.from_json(got["config"])


# ------------------------------------------------------------------ options


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ("gray\x1bscale", "unknown intervention 'gray\\x1bscale'"),
        ("blur\nnoise", "unknown intervention 'blur\\nnoise'"),
        ("cf:cue\taligned", "lower-case letters"),
        ("cf:ｃｕｅ", "lower-case letters"),
        ("CF:*", "unknown intervention 'CF:*'"),
        ("cf:**", "lower-case letters"),
        ("grayscale,", "name 2 is empty"),
        ("cf:*,cf:*", "given twice"),
        ("blur," * 40 + "noise", "at most 32"),
        (",".join(f"cf:n{i}" for i in range(33)), "at most 32"),
        ("x" * 100_000, "unknown intervention"),
        ([1, 2], "expected a list of texts"),
    ],
)
def test_bad_names_are_one_line(given: Any, needle: str) -> None:
    with pytest.raises(MMSpuBenchError, match=None) as err:
        with_options(None, {"metrics": "accuracy,interventions", "interventions": given})
    text = str(err.value)
    assert needle in text and "\n" not in text and len(text) < 400


def test_api_lists_keep_their_order_and_an_empty_text_is_refused() -> None:
    config = with_options(None, {"metrics": "accuracy,interventions", "interventions": ["noise", "cf:*"]})
    assert config.interventions == ("noise", "cf:*")
    assert with_options(None, {"metrics": "accuracy,interventions", "interventions": []}).interventions == (
        "grayscale",
        "blur",
        "equalize",
        "noise",
    )
    for empty in ("", " ", ","):
        with pytest.raises(MMSpuBenchError, match="--interventions"):
            with_options(None, {"metrics": "accuracy,interventions", "interventions": empty})


def test_an_empty_interventions_flag_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mmspubench.cli import main

    argv = ["eval", "--metrics", "accuracy,interventions", "--out", str(tmp_path / "run")]
    assert main([*argv, "--interventions", ""]) == 2
    assert "--interventions: no name given" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ forged entries, recompute


def _entry(line: dict[str, Any], k: int = 0) -> dict[str, Any]:
    entry: dict[str, Any] = line["interventions"][k]
    return entry


def _swap_cf(line: dict[str, Any]) -> None:
    line["interventions"][1:3] = line["interventions"][2:0:-1]


RECORD_EDITS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("nan cgl", lambda s: _entry(s).update(cgls=[math.nan] * len(s["conditions"])), "finite number"),
    ("inf cgl", lambda s: _entry(s)["cgls"].__setitem__(0, math.inf), "finite number"),
    ("huge int cgl", lambda s: _entry(s)["cgls"].__setitem__(0, 10**400), "finite number"),
    ("string cgl", lambda s: _entry(s)["cgls"].__setitem__(0, "1.0"), "must hold numbers only"),
    ("bool cgl", lambda s: _entry(s)["cgls"].__setitem__(0, True), "must hold numbers only"),
    ("short cgls", lambda s: _entry(s)["cgls"].pop(), "expected one per condition"),
    ("cgla_min huge", lambda s: _entry(s).update(cgla_min=10**400), "must be a finite number"),
    ("cgla_min bool", lambda s: _entry(s).update(cgla_min=True), "must be a finite number"),
    ("cgla_min nudged", lambda s: _entry(s).update(cgla_min=_entry(s)["cgla_min"] + 1e-9), "does not follow"),
    ("cgla_acc flipped", lambda s: _entry(s).update(cgla_acc=not _entry(s)["cgla_acc"]), "cgla_acc"),
    ("cgla_acc int", lambda s: _entry(s).update(cgla_acc=1), "must be true, false or null"),
    ("correct int", lambda s: _entry(s).update(correct=1), "must be true, false or null"),
    ("correct null", lambda s: _entry(s).update(correct=None), "must be true or false"),
    ("nan letter score", lambda s: _entry(s)["option_scores"].__setitem__(0, math.nan), "four finite"),
    ("huge letter score", lambda s: _entry(s)["option_scores"].__setitem__(0, 10**400), "four finite"),
    ("three letter scores", lambda s: _entry(s)["option_scores"].pop(), "interventions.option_scores"),
    ("digest upper case", lambda s: _entry(s).update(digest="A" * 64), "SHA-256"),
    ("digest number", lambda s: _entry(s).update(digest=5), "must be a string"),
    ("name null", lambda s: _entry(s).update(name=None), "must be a string"),
    ("targets a string", lambda s: _entry(s).update(targets="colorization"), "list of type names"),
    (
        "builtin targets forged",
        lambda s: _entry(s).update(targets=["background"]),
        "expected ['colorization']",
    ),
    ("cf targets empty", lambda s: _entry(s, 1).update(targets=[]), "none given"),
    ("cf targets twice", lambda s: _entry(s, 1).update(targets=s["types"] * 2), "distinct type names"),
    (
        "cf entry repeated",
        lambda s: s["interventions"].insert(2, copy.deepcopy(_entry(s, 1))),
        "appears twice",
    ),
    ("literal cf:* entry", lambda s: _entry(s, 1).update(name="cf:*"), "is not an intervention of the run"),
    (
        "cf entry bad name",
        lambda s: _entry(s, 1).update(name="cf:Cue Aligned"),
        "not a counterfactual's name",
    ),
    (
        "builtin after the cf entries",
        lambda s: s["interventions"].append(s["interventions"].pop(0)),
        "expected 'grayscale'",
    ),
    (
        "extra builtin",
        lambda s: s["interventions"].append(dict(_entry(s), name="noise")),
        "not an intervention",
    ),
    ("entries emptied", lambda s: s.update(interventions=[]), "expected 'grayscale'"),
    ("entries null", lambda s: s.update(interventions=None), "missing in an interventions run"),
    ("entries an object", lambda s: s.update(interventions={}), "must be a list of objects"),
    ("entry a string", lambda s: s["interventions"].__setitem__(0, "grayscale"), "must be an object"),
    ("entry without digest", lambda s: _entry(s).pop("digest"), "missing key 'digest'"),
    ("entry with a description", lambda s: _entry(s).update(description="x"), "unknown key 'description'"),
    ("targets as abbreviations", lambda s: _entry(s, 1).update(targets=["Col."]), "distinct type names"),
    (
        "a thousand built-in entries",
        lambda s: s["interventions"].extend([dict(_entry(s), name="noise") for i in range(1000)]),
        "is not an intervention of the run",
    ),
    ("lower-case letter", lambda s: _entry(s).update(prediction="c"), "is not A, B, C, D or null"),
    ("huge name", lambda s: _entry(s).update(name="x" * 100_000), "expected 'grayscale'"),
]


@pytest.mark.parametrize(("label", "edit", "needle"), RECORD_EDITS, ids=[c[0] for c in RECORD_EDITS])
def test_recompute_refuses_a_forged_entry(
    logprob_run: tuple[list[dict[str, Any]], RunConfig],
    label: str,
    edit: Callable[[dict[str, Any]], Any],
    needle: str,
) -> None:
    lines, config = copy.deepcopy(logprob_run[0]), logprob_run[1]
    edit(lines[0])
    with pytest.raises((MMSpuBenchError, ValueError, TypeError)) as err:
        results.recompute([SampleResult.from_json(s) for s in lines], config)
    text = str(err.value)
    assert needle in text, text
    assert "\n" not in text and len(text) < 600
    if isinstance(err.value, MMSpuBenchError):
        assert "record '000000'" in text


def test_unedited_records_recompute_to_the_written_section(
    logprob_run: tuple[list[dict[str, Any]], RunConfig], tmp_path: Path
) -> None:
    lines, config = logprob_run
    again = results.recompute([SampleResult.from_json(s) for s in lines], config)
    assert again["interventions"]["names"] == ["grayscale", "cf:cue-aligned", "cf:cue-removed"]
    assert set(again["interventions"]["counterfactual_gaps"]) == {
        "aligned_minus_broken",
        "removed_minus_broken",
    }
    json.dumps(again, allow_nan=False)


def test_cf_entries_in_another_order_give_the_same_figures(
    logprob_run: tuple[list[dict[str, Any]], RunConfig],
) -> None:
    """Held by design: without the dataset the shipped order is unknown, and no figure depends on it."""
    lines, config = copy.deepcopy(logprob_run[0]), logprob_run[1]
    plain = results.recompute([SampleResult.from_json(s) for s in lines], config)
    _swap_cf(lines[0])
    swapped = results.recompute([SampleResult.from_json(s) for s in lines], config)
    assert swapped["interventions"]["by_intervention"] == plain["interventions"]["by_intervention"]


# ------------------------------------------------------------------ submit


SUBMIT_EDITS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("raw output in logprob mode", lambda s: _entry(s).update(raw_output="A"), "interventions.raw_output"),
    ("scores dropped", lambda s: _entry(s).update(option_scores=None), "interventions.option_scores"),
    (
        "not the argmax",
        lambda s: _entry(s).update(prediction="A" if _entry(s)["prediction"] != "A" else "B"),
        "is not the argmax",
    ),
    ("nan score", lambda s: _entry(s)["option_scores"].__setitem__(0, math.nan), "interventions."),
]


@pytest.mark.parametrize(("label", "edit", "needle"), SUBMIT_EDITS, ids=[c[0] for c in SUBMIT_EDITS])
def test_submit_refuses_an_answer_that_does_not_follow_from_the_scores(
    logprob_run: tuple[list[dict[str, Any]], RunConfig],
    label: str,
    edit: Callable[[dict[str, Any]], Any],
    needle: str,
) -> None:
    lines, config = copy.deepcopy(logprob_run[0]), logprob_run[1]
    edit(lines[0])
    with pytest.raises(MMSpuBenchError, match=None) as err:
        check_sample_consistency([SampleResult.from_json(s) for s in lines], config, "samples.jsonl")
    assert needle in str(err.value) and "record '000000'" in str(err.value)


def test_submit_refuses_a_generate_entry_with_scores(tmp_path: Path) -> None:
    out = tmp_path / "run"
    got = _run(out, interventions=("grayscale",))
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    _entry(lines[0]).update(option_scores=[0.0] * 4)
    config = RunConfig.from_json(got["config"])
    with pytest.raises(MMSpuBenchError, match=r"interventions\.option_scores.*set in a generate-mode run"):
        check_sample_consistency([SampleResult.from_json(s) for s in lines], config, "samples.jsonl")
    lines[0]["interventions"][0].update(option_scores=None, raw_output=None)
    with pytest.raises(MMSpuBenchError, match=r"interventions\.raw_output.*missing in a generate-mode run"):
        check_sample_consistency([SampleResult.from_json(s) for s in lines], config, "samples.jsonl")


# ------------------------------------------------------------------ the dataset


def _only_on(item: int, bad: Callable[[Row], list[dict[str, Any]]]) -> Callable[[int, Row], list[Any]]:
    """Item ``item``'s counterfactuals made by ``bad``; the others' well formed."""
    return lambda i, row: bad(row) if i == item else [_cf(row, "cue-aligned"), _cf(row, "cue-removed")]


def _other_type(row: Row) -> list[str]:
    return ["shape"] if "shape" not in row["spurious_types"] else ["background"]


DATASET_CASES: list[tuple[str, Any, Sequence[str], str]] = [
    # item 7 is in the second chunk (batch 4): the run must be refused before any chunk is written
    (
        "cf:NAME an item lacks",
        _only_on(7, lambda r: [_cf(r, "cue-aligned")]),
        ("cf:cue-removed",),
        "record '000007': field 'counterfactuals': has no counterfactual 'cue-removed'",
    ),
    (
        "image of another size",
        _only_on(7, lambda r: [_cf(r, "cue-aligned", image=r["image"].resize((8, 8)))]),
        ("cf:*",),
        "counterfactuals[0].image': image is 8x8 RGB; expected the item image's 16x16 RGB",
    ),
    (
        "image of another mode",
        _only_on(7, lambda r: [_cf(r, "cue-aligned", image=r["image"].convert("L"))]),
        ("cf:*",),
        "image is 16x16 L",
    ),
    (
        "image missing",
        _only_on(7, lambda r: [_cf(r, "cue-aligned", image=None)]),
        ("cf:*",),
        "counterfactuals",
    ),
    (
        "name twice",
        _only_on(7, lambda r: [_cf(r, "cue-aligned"), _cf(r, "cue-aligned")]),
        ("cf:*",),
        "counterfactuals[1].name': name 'cue-aligned' given twice",
    ),
    (
        "name not [a-z0-9-]+",
        _only_on(7, lambda r: [_cf(r, "Cue Aligned")]),
        ("cf:*",),
        "does not match [a-z0-9-]+",
    ),
    (
        "targets outside the item",
        _only_on(7, lambda r: [_cf(r, "cue-aligned", targets=_other_type(r))]),
        ("cf:*",),
        "not a non-empty subset of the item's types",
    ),
    (
        "targets empty",
        _only_on(7, lambda r: [_cf(r, "cue-aligned", targets=[])]),
        ("cf:*",),
        "counterfactuals[0].targets",
    ),
    (
        "targets twice",
        _only_on(7, lambda r: [_cf(r, "cue-aligned", targets=r["spurious_types"][:1] * 2)]),
        ("cf:*",),
        "each once",
    ),
    ("empty lists under cf:*", lambda i, r: [], ("cf:*",), "none of the 10 items ships a counterfactual"),
]


@pytest.mark.parametrize(
    ("label", "edit", "names", "needle"), DATASET_CASES, ids=[c[0] for c in DATASET_CASES]
)
def test_a_bad_counterfactual_is_refused_before_anything_is_written(
    tmp_path: Path, label: str, edit: Any, names: Sequence[str], needle: str
) -> None:
    def load() -> Any:
        raise AssertionError("the model must not load")

    with pytest.raises(MMSpuBenchError) as err:
        run_eval(
            load,
            _dataset(edit=edit),
            dict(DATASET_INFO),
            _config(interventions=tuple(names)),
            tmp_path / "run",
            progress=False,
        )
    assert needle in str(err.value), str(err.value)
    assert not (tmp_path / "run").exists()


def test_empty_lists_are_fine_beside_a_builtin_and_with_a_limit(tmp_path: Path) -> None:
    """cf:* beside a built-in asks the built-in of every item; --limit checks only the run's items."""
    got = _run(tmp_path / "a", dataset=_dataset(edit=lambda i, r: []), interventions=("grayscale", "cf:*"))
    assert got["interventions"]["names"] == ["grayscale"]
    bad_late = _dataset(edit=_only_on(9, lambda r: [_cf(r, "Bad")]))
    got = _run(tmp_path / "b", dataset=bad_late, interventions=("cf:*",), limit=8)
    assert got["interventions"]["by_intervention"]["cf:cue-aligned"]["n"] == 8


# ------------------------------------------------------------------ the run folder


@pytest.mark.parametrize(
    "names",
    [("blur",), ("cf:*", "grayscale"), ("grayscale",), ("grayscale", "cf:*", "noise")],
)
def test_resume_with_other_interventions_is_refused(tmp_path: Path, names: tuple[str, ...]) -> None:
    out = tmp_path / "run"
    _run(out)
    before = (out / "samples.jsonl").read_bytes()
    with pytest.raises(MMSpuBenchError, match=r"holds a different run.*config\.interventions"):
        _run(out, interventions=names)
    assert (out / "samples.jsonl").read_bytes() == before


def test_a_killed_run_resumes_to_the_same_figures(tmp_path: Path) -> None:
    whole = _run(tmp_path / "whole")
    out = tmp_path / "killed"
    _run(out)
    lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
    (out / "samples.jsonl").write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    (out / "results.json").unlink()
    again = _run(out)
    assert again["interventions"] == whole["interventions"]


# ------------------------------------------------------------------ submit against the published twin


@pytest.fixture(scope="module")
def twin_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], RunConfig]:
    from mmspubench.cli import main
    from mmspubench.dataset_builder.load import load_benchmark

    root = tmp_path_factory.mktemp("twin")
    assert (
        main(["synth", "--out", str(root / "raw"), "--n", "9", "--image-size", "32", "--counterfactuals"])
        == 0
    )
    dataset = load_benchmark(root / "raw")
    got = _run(root / "run", dataset=dataset, answer_mode="logprob")
    lines = [json.loads(line) for line in (root / "run" / "samples.jsonl").read_text().splitlines()]
    return root / "raw", lines, RunConfig.from_json(got["config"])


TWIN_EDITS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("a cf entry dropped", lambda s: s["interventions"].pop(2), "are not the run's"),
    ("every cf entry dropped", lambda s: s.update(interventions=s["interventions"][:1]), "are not the run's"),
    ("cf entries swapped", _swap_cf, "are not the run's"),
    ("cf targets another type", lambda s: _entry(s, 1).update(targets=["shape"]), "targets ['shape']"),
    (
        "a thousand cf entries added",  # under cf:* only the published items tell them from shipped ones
        lambda s: s["interventions"].extend([dict(_entry(s, 1), name=f"cf:x{i}") for i in range(1000)]),
        "are not the run's",
    ),
    (
        "cf targets narrowed",
        lambda s: _entry(s, 1).update(targets=s["types"][:1] if len(s["types"]) > 1 else []),
        "targets",
    ),
]


@pytest.mark.parametrize(("label", "edit", "needle"), TWIN_EDITS, ids=[c[0] for c in TWIN_EDITS])
def test_submit_checks_the_entries_against_the_published_counterfactuals(
    twin_run: tuple[Path, list[dict[str, Any]], RunConfig],
    label: str,
    edit: Callable[[dict[str, Any]], Any],
    needle: str,
) -> None:
    """Without the dataset a cf:* sample that drops, reorders or retargets its entries cannot be told
    from an item that ships fewer; the published split's records tell."""
    from mmspubench.eval.submit.published import _published, check_against_dataset

    folder, lines, config = twin_run
    items = _published("twin", "v1", str(folder))
    assert all(len(item.counterfactuals) == 3 for item in items.values())
    genuine = [SampleResult.from_json(s) for s in lines]
    check_against_dataset(genuine, items, config, "samples.jsonl")
    forged = copy.deepcopy(lines)
    edit(forged[0])
    with pytest.raises(MMSpuBenchError) as err:
        check_against_dataset([SampleResult.from_json(s) for s in forged], items, config, "samples.jsonl")
    assert f"record {lines[0]['id']!r}: field 'interventions'" in str(err.value)
    assert needle in str(err.value)


def _positive_scores(line: dict[str, Any]) -> None:
    entry = _entry(line)
    entry.update(option_scores=[5.0, 0.0, 0.0, 0.0], prediction="A", correct=line["answer"] == "A")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_positive_scores, "interventions[0].option_scores"),
        (lambda s: _entry(s)["cgls"].__setitem__(0, 3.0), "interventions[0].cgls"),
    ],
)
def test_submit_refuses_intervention_scores_that_are_no_log_probabilities(
    logprob_run: tuple[list[dict[str, Any]], RunConfig], edit: Callable[[dict[str, Any]], Any], field: str
) -> None:
    """A letter score or CGL above 0 is no log-probability, as for the published answer's."""
    from mmspubench.eval.submit.submission import check_samples

    lines = copy.deepcopy(logprob_run[0])
    check_samples(tuple(SampleResult.from_json(s) for s in lines), "samples.jsonl")
    edit(lines[0])
    with pytest.raises(
        MMSpuBenchError, match=rf"record '000000': field '{re.escape(field)}'.*log-probability"
    ):
        check_samples(tuple(SampleResult.from_json(s) for s in lines), "samples.jsonl")


def _section_of(logprob_run: tuple[list[dict[str, Any]], RunConfig]) -> tuple[dict[str, Any], Any]:
    lines, config = logprob_run
    samples = tuple(SampleResult.from_json(s) for s in lines)
    return results.recompute(samples, config)["interventions"], samples


SECTION_EDITS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("gain raised", lambda s: s["by_intervention"]["grayscale"]["change"].update(gain=50.0), "change.gain"),
    ("names reversed", lambda s: s["names"].reverse(), "interventions.names"),
    ("an intervention dropped", lambda s: s["by_intervention"].pop("cf:cue-removed"), "cf:cue-removed"),
    ("gaps dropped", lambda s: s.pop("counterfactual_gaps"), "counterfactual_gaps"),
    (
        "contrast nulled",
        lambda s: s["by_intervention"]["grayscale"].update(targeted_contrast=None),
        "targeted_contrast",
    ),
    ("flip rate as text", lambda s: s["by_intervention"]["grayscale"].update(flip_rate="0"), "flip_rate"),
]


@pytest.mark.parametrize(("label", "edit", "needle"), SECTION_EDITS, ids=[c[0] for c in SECTION_EDITS])
def test_submit_refuses_an_edited_section(
    logprob_run: tuple[list[dict[str, Any]], RunConfig],
    label: str,
    edit: Callable[[dict[str, Any]], Any],
    needle: str,
) -> None:
    from mmspubench.eval.submit.submission import compare_aggregates

    section, samples = _section_of(logprob_run)
    recomputed = results.recompute(samples, logprob_run[1])["interventions"]
    compare_aggregates(section, recomputed, "interventions", "results.json")
    edit(section)
    with pytest.raises(MMSpuBenchError, match=re.escape(needle)):
        compare_aggregates(section, recomputed, "interventions", "results.json")


@pytest.mark.parametrize(
    ("names", "needle"),
    [
        (("bogus",), "unknown intervention 'bogus'"),
        (("blur", "blur"), "'blur' is given twice"),
        (tuple("grayscale"), "unknown intervention 'g'"),  # a text read back as its letters
    ],
)
def test_a_config_read_back_with_names_eval_never_takes_is_refused(
    names: tuple[str, ...], needle: str
) -> None:
    """results.json's config is read back without the option checks; a made-up name whose entries
    were written to match would otherwise recompute (and pass the published-split check)."""
    from dataclasses import replace

    from mmspubench.dataset_builder.schema import TYPE_NAMES

    config = replace(_config(), interventions=names, metrics=("accuracy", "interventions"))
    line = {
        "id": "000000",
        "types": [TYPE_NAMES[0]],
        "answer": "A",
        "prediction": "A",
        "correct": True,
        "raw_output": "A",
        "option_scores": None,
        "class_name": "car",
        "conditions": [],
        "cgla_min": None,
        "cgla_acc": None,
        "interventions": [
            {
                "name": n,
                "targets": [TYPE_NAMES[0]],
                "digest": "ab" * 32,
                "prediction": "A",
                "correct": True,
                "raw_output": "A",
                "option_scores": None,
                "cgls": None,
                "cgla_min": None,
                "cgla_acc": None,
            }
            for n in dict.fromkeys(names)
        ],
    }
    with pytest.raises(MMSpuBenchError, match=re.escape(needle)) as err:
        results.recompute([SampleResult.from_json(line)], config)
    assert str(err.value).startswith("config: field 'interventions': ")


def test_an_item_built_in_memory_with_a_counterfactual_of_another_size_is_refused() -> None:
    """The Space scores one item at a time (``evaluate_item``), without the run's dataset check."""
    from mmspubench.eval.data import row_to_item
    from mmspubench.eval.runner import evaluate_item

    row = _dataset(1, edit=lambda i, r: [_cf(r, "cue-aligned", image=r["image"].resize((8, 8)))])[0]
    item = row_to_item(row, "hand-made")
    with pytest.raises(
        MMSpuBenchError, match=r"record '000000': field 'counterfactuals.image': cf:cue-aligned: image is 8x8"
    ):
        evaluate_item(FakeModel(), item, _config(interventions=("cf:*",)))


def test_resume_after_a_counterfactual_image_changed_is_refused(tmp_path: Path) -> None:
    """The counterfactual images are part of the dataset's content hash, so of the run's identity."""
    from mmspubench.cli import main
    from mmspubench.eval.api import evaluate
    from PIL import Image

    raw = tmp_path / "raw"
    assert main(["synth", "--out", str(raw), "--n", "9", "--image-size", "32", "--counterfactuals"]) == 0
    options = {"metrics": ("accuracy", "interventions"), "interventions": ("cf:cue-aligned",), "limit": 2}
    evaluate(dataset=raw, out=tmp_path / "run", **options)
    image = raw / "data" / "images" / "counterfactuals" / "000000-cue-aligned.png"
    with Image.open(image) as picture:
        Image.new(picture.mode, picture.size).save(image)
    with pytest.raises(MMSpuBenchError, match="holds a different run"):
        evaluate(dataset=raw, out=tmp_path / "run", **options)


def test_a_stored_label_outside_the_types_is_refused_not_wrapped(tmp_path: Path) -> None:
    """A ClassLabel index of -1 (a missing label in Arrow) must not read as the last type."""
    import pyarrow as pa

    data = _dataset()
    table = data.data.table
    column = table.column("counterfactuals").to_pylist()
    column[7][0]["targets"] = [-1]
    patched = table.set_column(
        table.column_names.index("counterfactuals"),
        "counterfactuals",
        pa.array(column, table.schema.field("counterfactuals").type),
    )
    import datasets

    bad = datasets.Dataset(patched, info=data.info)
    with pytest.raises(
        MMSpuBenchError, match=r"record '000007': field 'counterfactuals\[0\]\.targets': bad value -1"
    ):
        run_eval(FakeModel, bad, dict(DATASET_INFO), _config(), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def _other_digest(line: dict[str, Any], k: int) -> None:
    """Entry ``k`` claims the digest of entry ``k + 1`` (another image of the same item)."""
    _entry(line, k)["digest"] = _entry(line, k + 1)["digest"]


DIGEST_EDITS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("grayscale claims the first cf's image", lambda s: _other_digest(s, 0)),
    ("a cf claims the next cf's image", lambda s: _other_digest(s, 1)),
    ("a well-formed digest of nothing shown", lambda s: _entry(s, 2).update(digest="0" * 64)),
]


@pytest.mark.parametrize(("label", "edit"), DIGEST_EDITS, ids=[c[0] for c in DIGEST_EDITS])
def test_submit_recomputes_each_digest_from_the_published_images(
    twin_run: tuple[Path, list[dict[str, Any]], RunConfig], label: str, edit: Callable[[dict[str, Any]], Any]
) -> None:
    """A digest is re-made from the published split as eval makes it: a built-in from the item's
    image, a counterfactual from the image the record ships; one that differs is refused by name."""
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.submit.published import _published, check_against_dataset
    from mmspubench.eval.views.interventions import published

    folder, lines, config = twin_run
    items = _published("twin", "v1", str(folder))
    facts = {"interventions": published(load_benchmark(folder), config, str(folder))}
    assert {len(d) for d in facts["interventions"].values()} == {4}  # grayscale and the three cf
    genuine = [SampleResult.from_json(s) for s in lines]
    check_against_dataset(genuine, items, config, "samples.jsonl", facts)
    forged = copy.deepcopy(lines)
    edit(forged[1])
    with pytest.raises(MMSpuBenchError) as err:
        check_against_dataset(
            [SampleResult.from_json(s) for s in forged], items, config, "samples.jsonl", facts
        )
    assert f"record {lines[1]['id']!r}: field 'interventions.digest'" in str(err.value)
    assert "is not the digest of the image eval shows" in str(err.value)
