"""The synthetic generator: determinism, coverage, record validity, planting policies, release writing."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, TYPE_NAMES
from mmspubench.dataset_builder.synth.generate import SynthItem, generate_items, write_release
from mmspubench.dataset_builder.synth.vocab import CLASS_BY_NAME, CLASSES, SPURIOUS_VALUES, home_of
from mmspubench.errors import MMSpuBenchError

SMALL = 48
RECORD_KEYS = [
    "id",
    "image",
    "question",
    "options",
    "answer",
    "class_name",
    "core_attributes",
    "spurious_attributes",
    "spurious_types",
    "source",
]


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _home_flags(item: SynthItem) -> list[bool]:
    true = CLASS_BY_NAME[item.class_name]
    return [true.home_key(t) == k for t, k in item.scene.planted]


def test_same_arguments_give_byte_identical_releases(tmp_path: Path) -> None:
    kwargs = {"seed": 3, "image_size": SMALL, "mode": "train", "correlation": 0.7}
    a = write_release(tmp_path / "a", generate_items(24, **kwargs))
    b = write_release(tmp_path / "b", generate_items(24, **kwargs))
    files_a, files_b = _folder_bytes(a), _folder_bytes(b)
    assert len(files_a) == 25
    assert files_a == files_b
    c = write_release(
        tmp_path / "c", generate_items(24, seed=4, image_size=SMALL, mode="train", correlation=0.7)
    )
    assert _folder_bytes(c)["annotation.json"] != files_a["annotation.json"]


def test_item_does_not_depend_on_n() -> None:
    short = [item.record() for item in generate_items(5, seed=1, image_size=SMALL)]
    long = [item.record() for item in generate_items(13, seed=1, image_size=SMALL)]
    assert long[:5] == short


@pytest.mark.parametrize("seed", [0, 1, 2, 17])
def test_all_nine_types_present_from_nine_items(seed: int) -> None:
    types = {t for item in generate_items(9, seed=seed, image_size=SMALL) for t in item.spurious_types}
    assert types == set(TYPE_NAMES)


def test_benchmark_mode_balances_types_classes_and_letters() -> None:
    items = list(generate_items(180, seed=5, image_size=32))
    per_type = Counter(t for item in items for t in item.spurious_types)
    # Each type is the drawn (first) type of 20 items; second types only add to that.
    assert all(per_type[t] >= 20 for t in TYPE_NAMES), per_type
    assert Counter(item.class_name for item in items) == {c.name: 18 for c in CLASSES}
    assert Counter(item.answer for item in items) == dict.fromkeys(ANSWER_LETTERS, 45)
    assert 1 <= sum(len(item.spurious_types) == 2 for item in items) < 120


def test_records_are_schema_valid_and_questions_hide_class_and_core() -> None:
    class_names = [c.name for c in CLASSES]
    for item in generate_items(120, seed=2, image_size=32, mode="train", correlation=0.5):
        record = item.record()
        assert list(record) == RECORD_KEYS
        assert re.fullmatch(r"\d{6}", record["id"])
        assert record["image"] == f"data/images/{record['id']}.png"
        assert record["source"] == "synthetic"
        assert len(record["options"]) == 4 and len(set(record["options"])) == 4
        assert all(o in class_names for o in record["options"])
        assert record["answer"] in ANSWER_LETTERS
        assert record["options"][ANSWER_LETTERS.index(record["answer"])] == record["class_name"]
        for field in ("core_attributes", "spurious_attributes"):
            assert 1 <= len(record[field]) <= 5 and all(isinstance(a, str) and a for a in record[field])
        assert 1 <= len(record["spurious_types"]) <= 2
        assert set(record["spurious_types"]) <= set(TYPE_NAMES)
        assert len(record["spurious_attributes"]) == len(record["spurious_types"])
        question = record["question"].lower()
        assert question.strip()
        for name in class_names:
            assert not re.search(rf"\b{name}\b", question), (name, question)
        for core in record["core_attributes"]:
            assert core.lower() not in question
        planted = dict(item.scene.planted)
        for t in record["spurious_types"]:
            phrase = next(v.phrase for v in SPURIOUS_VALUES[t] if v.key == planted[t])
            assert phrase.lower() in question


def test_every_core_attribute_is_shared_by_at_least_two_classes() -> None:
    # A core text unique to one class would name the class on its own, whatever the picture, and
    # CGLA could not tell a cue-following model from one that looks (the positive control).
    holders = Counter(text for c in CLASSES for text in set(c.core_attributes))
    assert holders and min(holders.values()) >= 2, holders
    # Together the texts and the picture still tell the classes apart: no two classes share all.
    core_sets = [frozenset(c.core_attributes) for c in CLASSES]
    assert len(set(core_sets)) == len(CLASSES)


def test_written_release_passes_the_builder_validation(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.builder import validate_release

    out = write_release(tmp_path / "raw", generate_items(18, seed=0, image_size=SMALL))
    records = validate_release(out)
    assert [r.id for r in records] == [f"{i:06d}" for i in range(18)]
    annotation = json.loads((out / "annotation.json").read_text(encoding="utf-8"))
    assert [a["id"] for a in annotation] == [r.id for r in records]


@pytest.mark.parametrize("correlation", [0.9, 0.5])
def test_training_correlation_sets_the_share_of_home_value_items(correlation: float) -> None:
    items = list(generate_items(400, seed=11, image_size=32, mode="train", correlation=correlation))
    flags = [_home_flags(item) for item in items]
    # An item is either fully aligned (all planted values at home) or fully broken.
    assert all(all(f) or not any(f) for f in flags)
    assert [item.cue_aligned for item in items] == [all(f) for f in flags]
    share = sum(item.cue_aligned for item in items) / len(items)
    # Binomial standard deviation at n=400 is at most 0.025; allow about 2.5 of them.
    assert abs(share - correlation) < 0.06, share
    assert len({item.class_name for item in items}) == len(CLASSES)


@pytest.mark.parametrize("correlation, expected", [(1.0, True), (0.0, False)])
def test_extreme_correlations_are_exact(correlation: float, expected: bool) -> None:
    items = generate_items(60, seed=4, image_size=32, mode="train", correlation=correlation)
    assert all(item.cue_aligned is expected for item in items)


def test_training_mode_defaults_to_correlation_point_nine() -> None:
    items = list(generate_items(300, seed=6, image_size=32, mode="train"))
    share = sum(item.cue_aligned for item in items) / len(items)
    assert abs(share - 0.9) < 0.06


@pytest.mark.parametrize("mode, cue", [("train", "broken"), ("benchmark", None), ("benchmark", "broken")])
def test_broken_cue_never_plants_the_true_home_and_offers_the_lure(mode: str, cue: str | None) -> None:
    for item in generate_items(200, seed=8, image_size=32, mode=mode, cue=cue):
        assert not any(_home_flags(item))
        assert item.decoy is not None and item.decoy != item.class_name
        assert item.decoy in item.options
        decoy = CLASS_BY_NAME[item.decoy]
        assert all(decoy.home_key(t) == k for t, k in item.scene.planted)
        # Every class at home with a planted value is among the options, up to the three wrong slots.
        lured = {n for t, k in item.scene.planted for n in home_of(t, k)} - {item.class_name}
        assert len(lured & set(item.options)) == min(3, len(lured))


def test_aligned_cue_always_plants_the_true_home() -> None:
    items = list(generate_items(100, seed=9, image_size=32, mode="train", cue="aligned"))
    assert all(all(_home_flags(item)) and item.decoy is None for item in items)


def test_random_cue_is_uncorrelated_with_the_class() -> None:
    items = list(generate_items(600, seed=10, image_size=32, mode="train", cue="random"))
    pairs = [(t, k) for item in items for t, k in item.scene.planted]
    home_hits = sum(f for item in items for f in _home_flags(item))
    expected = sum(1 / len(SPURIOUS_VALUES[t]) for t, _ in pairs)
    assert abs(home_hits - expected) < 4 * expected**0.5, (home_hits, expected)
    for t in TYPE_NAMES:
        assert {k for tt, k in pairs if tt == t} == {v.key for v in SPURIOUS_VALUES[t]}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"correlation": 0.5, "cue": "broken"}, "either a correlation or a cue"),
        ({"correlation": 1.5}, "correlation 1.5"),
        ({"cue": "sideways"}, "cue 'sideways'"),
        ({"mode": "eval"}, "mode 'eval'"),
        ({"image_size": 8}, "image size 8"),
        ({"seed": -1}, "seed -1"),
    ],
)
def test_bad_arguments_raise_before_any_item(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(MMSpuBenchError, match=re.escape(message)):
        generate_items(3, **kwargs)


def test_negative_n_is_refused() -> None:
    with pytest.raises(MMSpuBenchError, match="n -1"):
        generate_items(-1)


def test_write_release_refuses_existing_out_and_overwrites_on_request(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    write_release(out, generate_items(3, seed=0, image_size=32))
    before = _folder_bytes(out)
    with pytest.raises(MMSpuBenchError, match="already exists"):
        write_release(out, generate_items(5, seed=1, image_size=32))
    assert _folder_bytes(out) == before
    write_release(out, generate_items(5, seed=1, image_size=32), overwrite=True)
    assert len(json.loads((out / "annotation.json").read_text(encoding="utf-8"))) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw"]


def test_failure_midway_leaves_nothing_behind(tmp_path: Path) -> None:
    def failing() -> Iterator[SynthItem]:
        yield from generate_items(2, seed=0, image_size=32)
        raise RuntimeError("generator broke")

    with pytest.raises(RuntimeError, match="generator broke"):
        write_release(tmp_path / "raw", failing())
    assert list(tmp_path.iterdir()) == []


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    item = next(generate_items(1, seed=0, image_size=32))
    with pytest.raises(MMSpuBenchError, match="duplicate id"):
        write_release(tmp_path / "raw", [item, item])
    assert list(tmp_path.iterdir()) == []
