"""Exact counterfactuals of the synthetic twin: only the planted values change, and the records
carrying them validate, build and load back; a release without them builds as before."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.load import content_hash, load_benchmark
from mmspubench.dataset_builder.schema import FEATURES, FEATURES_WITH_COUNTERFACTUALS, TYPE_NAMES, Item
from mmspubench.dataset_builder.synth.counterfactuals import (
    CONDITIONS,
    counterfactual_scenes,
    render_counterfactuals,
)
from mmspubench.dataset_builder.synth.draw import _colorize, render_scene
from mmspubench.dataset_builder.synth.generate import SynthConfig, SynthItem, make_item
from mmspubench.dataset_builder.synth.shapes import NEUTRAL_BACKGROUND
from mmspubench.dataset_builder.synth.vocab import CLASS_BY_NAME, CLASSES
from PIL import Image

SMALL = 32
CONFIG = SynthConfig(image_size=SMALL)
# Content hash of the built `synth --n 9 --image-size 32` release: a release without
# counterfactuals builds to the bytes it built to before the counterfactuals field existed (its
# card since says that eval.yaml has two tasks, the one change to these bytes).
PLAIN_BUILD_HASH = "356a1e963a96476bea2465b25a721e7a2a8752bb29db3ab607726541a163064f"


def _items(n: int = 36) -> list[SynthItem]:
    return [make_item(i, CONFIG) for i in range(n)]


def _single(type_name: str) -> SynthItem:
    return next(item for item in _items(200) if item.spurious_types == (type_name,))


def test_only_the_planted_values_change() -> None:
    for item in _items():
        scenes = counterfactual_scenes(item.scene)
        assert [cf.name for cf in scenes] == list(CONDITIONS)
        for cf in scenes:
            kept = {k: v for k, v in asdict(cf.scene).items() if k != "planted"}
            assert kept == {k: v for k, v in asdict(item.scene).items() if k != "planted"}
            assert cf.targets == item.spurious_types
            assert "\n" not in cf.description and cf.description
        aligned, random, removed = scenes
        assert [t for t, _ in aligned.scene.planted] == list(item.spurious_types)
        assert [t for t, _ in random.scene.planted] == list(item.spurious_types)
        assert removed.scene.planted == ()


def test_cue_aligned_plants_the_true_class_home_values() -> None:
    for item in _items():
        true = CLASS_BY_NAME[item.class_name]
        aligned = counterfactual_scenes(item.scene)[0].scene
        assert aligned.planted == tuple((t, true.home_key(t)) for t in item.spurious_types)
        # Benchmark mode breaks the cue: the published values are never the true class's.
        assert aligned.planted != item.scene.planted


def test_cue_random_is_seeded_and_never_reads_the_class() -> None:
    item = _items()[0]
    random = counterfactual_scenes(item.scene)[1].scene.planted
    assert counterfactual_scenes(item.scene)[1].scene.planted == random
    for other in CLASSES:
        moved = replace(item.scene, class_name=other.name)
        assert counterfactual_scenes(moved)[1].scene.planted == random
    draws = {counterfactual_scenes(replace(item.scene, noise_seed=s))[1].scene.planted for s in range(40)}
    assert len(draws) > 1


def test_cue_removed_background_is_the_neutral_colour() -> None:
    item = _single("background")
    image = next(img for cf, img in render_counterfactuals(item) if cf.name == "cue-removed")
    assert image.getpixel((0, 0)) == NEUTRAL_BACKGROUND
    assert item.pil_image.getpixel((0, 0)) != NEUTRAL_BACKGROUND


def test_colorization_counterfactuals_differ_only_by_the_tint() -> None:
    item = _single("colorization")
    images = {cf.name: np.asarray(img) for cf, img in render_counterfactuals(item)}
    plain = images["cue-removed"].astype(float)
    home = CLASS_BY_NAME[item.class_name].home_key("colorization")
    planted = item.scene.planted_key("colorization") or ""
    # The untinted scene, tinted with each value, is exactly each image: same object, same mask.
    for arr, key in ((images["cue-aligned"], home), (np.asarray(item.pil_image), planted)):
        expected = np.clip(np.rint(_colorize(plain, key)), 0, 255).astype(np.uint8)
        assert np.array_equal(arr, expected)
    assert not np.array_equal(images["cue-aligned"], np.asarray(item.pil_image))


def _synth(out: Path, *extra: str) -> Path:
    assert main(["synth", "--out", str(out), "--n", "9", "--image-size", str(SMALL), *extra]) == 0
    return out


def test_flag_leaves_the_items_unchanged(tmp_path: Path) -> None:
    plain, with_cf = _synth(tmp_path / "plain"), _synth(tmp_path / "cf", "--counterfactuals")
    records = json.loads((with_cf / "annotation.json").read_text(encoding="utf-8"))
    for record in records:
        entries = record.pop("counterfactuals")
        assert [e["name"] for e in entries] == list(CONDITIONS)
        for entry in entries:
            assert entry["image"] == f"data/images/counterfactuals/{record['id']}-{entry['name']}.png"
    assert records == json.loads((plain / "annotation.json").read_text(encoding="utf-8"))
    for path in sorted((plain / "data" / "images").iterdir()):
        assert (with_cf / "data" / "images" / path.name).read_bytes() == path.read_bytes()


def test_release_with_counterfactuals_builds_and_loads_back(tmp_path: Path) -> None:
    raw = _synth(tmp_path / "raw", "--counterfactuals")
    built = tmp_path / "built"
    assert main(["build", "--source", str(raw), "--out", str(built)]) == 0
    records = json.loads((raw / "annotation.json").read_text(encoding="utf-8"))
    expected = {
        (r["id"], e["name"]): (np.asarray(Image.open(raw / e["image"])), e)
        for r in records
        for e in r["counterfactuals"]
    }
    shutil.rmtree(raw)  # the images are embedded in the Parquet, not read from the raw release
    ds = datasets.load_dataset(str(built), split="test")
    assert ds.features == FEATURES_WITH_COUNTERFACTUALS
    for row in ds:
        assert len(row["counterfactuals"]) == 3
        for entry in row["counterfactuals"]:
            pixels, raw_entry = expected[(row["id"], entry["name"])]
            assert np.array_equal(np.asarray(entry["image"].convert("RGB")), pixels)
            assert [TYPE_NAMES[t] for t in entry["targets"]] == raw_entry["targets"]
            assert entry["description"] == raw_entry["description"]
    loaded = load_benchmark(built)
    item = Item.from_row(loaded[0], "test")
    assert [c.name for c in item.counterfactuals] == list(CONDITIONS)
    assert item.counterfactuals[0].targets == item.spurious_types


def test_release_without_counterfactuals_builds_as_before(tmp_path: Path) -> None:
    raw = _synth(tmp_path / "raw")
    built = tmp_path / "built"
    assert main(["build", "--source", str(raw), "--out", str(built)]) == 0
    assert "counterfactuals" not in (built / "README.md").read_text(encoding="utf-8")
    ds = load_benchmark(built)
    assert ds.features == FEATURES
    assert Item.from_row(ds[0], "test").counterfactuals == ()
    assert content_hash(built) == PLAIN_BUILD_HASH


def test_the_card_names_every_task_of_eval_yaml_and_the_counterfactuals_field(tmp_path: Path) -> None:
    """The card says what eval.yaml holds (its tasks, from the same declaration), and its fields
    table has a row for `counterfactuals` in a build that ships them (and only there)."""
    import yaml
    from mmspubench.dataset_builder.eval_yaml import TASKS

    raw = _synth(tmp_path / "raw", "--counterfactuals")
    built = tmp_path / "built"
    assert main(["build", "--source", str(raw), "--out", str(built)]) == 0
    card = (built / "README.md").read_text(encoding="utf-8")
    tasks = [t["id"] for t in yaml.safe_load((built / "eval.yaml").read_text())["tasks"]]
    assert tasks == [t.id for t in TASKS] and len(tasks) == 2
    assert "`evaluation_framework: inspect-ai` and two tasks, `mcq_accuracy` and `blind_accuracy`" in card
    assert "one task" not in card
    assert "| `counterfactuals` | list of {`image`, `name`, `targets`, `description`} |" in card


Records = list[dict[str, Any]]


def _entry(records: Records, index: int = 0) -> dict[str, Any]:
    entry: dict[str, Any] = records[0]["counterfactuals"][index]
    return entry


def _save(raw: Path, name: str, image: Image.Image, fmt: str = "PNG") -> str:
    path = f"data/images/counterfactuals/{name}"
    image.save(raw / path, format=fmt)
    return path


BAD_CASES: dict[str, tuple[str, Callable[[Path, Records], None], str]] = {
    "missing image": ("image", lambda raw, r: _entry(r).update(image="data/images/nope.png"), "not found"),
    "outside the release": ("image", lambda raw, r: _entry(r).update(image="../x.png"), "'..'"),
    "other size": (
        "image",
        lambda raw, r: _entry(r).update(image=_save(raw, "big.png", Image.new("RGB", (SMALL + 1, SMALL)))),
        "33x32 RGB",
    ),
    "other mode": (
        "image",
        lambda raw, r: _entry(r).update(image=_save(raw, "grey.png", Image.new("L", (SMALL, SMALL)))),
        "32x32 L",
    ),
    "not png or jpeg": (
        "image",
        lambda raw, r: _entry(r).update(image=_save(raw, "x.gif", Image.new("RGB", (SMALL, SMALL)), "GIF")),
        "format GIF",
    ),
    "duplicate name": ("name", lambda raw, r: _entry(r, 1).update(name="cue-aligned"), "given twice"),
    "bad name": ("name", lambda raw, r: _entry(r).update(name="Cue_Aligned"), "[a-z0-9-]+"),
    "unknown target": ("targets", lambda raw, r: _entry(r).update(targets=["smell"]), "unknown type"),
    "target not planted": (
        "targets",
        lambda raw, r: _entry(r).update(
            targets=[t for t in TYPE_NAMES if t not in r[0]["spurious_types"]][:1]
        ),
        "not one of the item's spurious types",
    ),
    "empty targets": ("targets", lambda raw, r: _entry(r).update(targets=[]), "non-empty list"),
    "empty description": (
        "description",
        lambda raw, r: _entry(r).update(description=" "),
        "one non-empty line",
    ),
    "unstorable description": (
        "description",
        lambda raw, r: _entry(r).update(description="a\ud800b"),
        "cannot be stored as UTF-8",
    ),
    "two-line description": (
        "description",
        lambda raw, r: _entry(r).update(description="a\nb"),
        "one non-empty line",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_counterfactuals_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    field, change, message = BAD_CASES[case]
    raw = _synth(tmp_path / "raw", "--counterfactuals")
    records = json.loads((raw / "annotation.json").read_text(encoding="utf-8"))
    change(raw, records)
    (raw / "annotation.json").write_text(json.dumps(records), encoding="utf-8")
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["build", "--source", str(raw), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    index = 1 if case == "duplicate name" else 0
    assert str(raw / "annotation.json") in err and "record '000000'" in err
    assert f"field 'counterfactuals[{index}].{field}'" in err and message in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    ("value", "where"),
    [("x", "counterfactuals"), (["x"], "counterfactuals[0]"), ([{"image": "a.png"}], "counterfactuals[0]")],
)
def test_malformed_counterfactuals_list_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any, where: str
) -> None:
    raw = _synth(tmp_path / "raw")
    records = json.loads((raw / "annotation.json").read_text(encoding="utf-8"))
    records[0]["counterfactuals"] = value
    (raw / "annotation.json").write_text(json.dumps(records), encoding="utf-8")
    capsys.readouterr()
    assert main(["build", "--source", str(raw), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"field '{where}'" in err and "record '000000'" in err, err
    assert not (tmp_path / "out").exists()


def test_counterfactual_images_are_the_renderer_s() -> None:
    item = _items()[3]
    for cf, image in render_counterfactuals(item):
        assert image.tobytes() == render_scene(cf.scene, SMALL).tobytes()
        assert image.size == item.pil_image.size and image.mode == item.pil_image.mode


def test_eval_ignores_the_counterfactuals(tmp_path: Path) -> None:
    from mmspubench.eval import prompts
    from mmspubench.eval.config import RunConfig
    from mmspubench.eval.runner import run_eval

    from tests.eval.fakes import DATASET_INFO, FakeModel

    outputs = []
    for name, extra in (("plain", ()), ("cf", ("--counterfactuals",))):
        raw = _synth(tmp_path / f"raw-{name}", *extra)
        assert main(["build", "--source", str(raw), "--out", str(tmp_path / f"built-{name}")]) == 0
        config = RunConfig(model="fake", dataset="hand-made", prompts=prompts.prompt_spec(), batch_size=3)
        out = tmp_path / f"run-{name}"
        ds = load_benchmark(tmp_path / f"built-{name}")
        run_eval(lambda: FakeModel(0.0), ds, dict(DATASET_INFO), config, out, progress=False)
        outputs.append(out)
    assert (outputs[0] / "samples.jsonl").read_bytes() == (outputs[1] / "samples.jsonl").read_bytes()
    # results.json is the same but for the wall-clock timings and the time it was written.
    plain, with_cf = (json.loads((out / "results.json").read_text(encoding="utf-8")) for out in outputs)
    for run in (plain, with_cf):
        assert run.pop("timing") and run.pop("created_at")
    assert plain == with_cf


def test_a_counterfactuals_column_of_another_type_is_refused() -> None:
    from mmspubench.dataset_builder.load import check_features
    from mmspubench.errors import MMSpuBenchError

    features = datasets.Features({**FEATURES, "counterfactuals": datasets.List(datasets.Value("string"))})
    ds = datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    with pytest.raises(MMSpuBenchError, match="field 'counterfactuals' has type"):
        check_features(ds, "hand-made")
    good = FEATURES_WITH_COUNTERFACTUALS
    check_features(datasets.Dataset.from_dict({name: [] for name in good}, features=good), "hand-made")


def test_synth_says_how_often_the_text_still_names_the_changed_cue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.dataset_builder.synth.counterfactuals import text_names_cue
    from mmspubench.dataset_builder.synth.generate import generate_items

    _synth(tmp_path / "cf", "--counterfactuals")
    out = capsys.readouterr().out
    assert "the question names the planted cue in 9 of 9 items" in out
    _synth(tmp_path / "plain")
    assert "names the planted cue" not in capsys.readouterr().out
    # the default twin: every question names its cue; an edited question no longer does
    items = list(generate_items(90))
    assert all(text_names_cue(i) for i in items)
    assert not text_names_cue(replace(items[0], question="What is the object?"))


def test_the_docs_count_of_cue_random_drawing_the_published_values() -> None:
    """docs/benchmark/synthetic.md: 10 of the 90 default items draw their published values as cue-random."""
    from mmspubench.dataset_builder.synth.generate import generate_items

    same = sum(
        cf.scene.planted == item.scene.planted
        for item in generate_items(90)
        for cf in counterfactual_scenes(item.scene)
        if cf.name == "cue-random"
    )
    assert same == 10
    assert (
        "in 10\n  of the 90 default items"
        in (Path(__file__).parents[3] / "docs/benchmark/synthetic.md").read_text()
    )
