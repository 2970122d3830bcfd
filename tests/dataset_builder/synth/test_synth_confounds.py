"""Planted confounds of the synthetic twin: a letter bias and a text prior (positive controls)."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.schema import ANSWER_LETTERS, TYPE_NAMES
from mmspubench.dataset_builder.synth.confounds import TEXT_PRIOR_WORDING, parse_letter_bias
from mmspubench.dataset_builder.synth.generate import generate_items, write_release
from mmspubench.dataset_builder.synth.vocab import CLASSES
from mmspubench.errors import MMSpuBenchError
from PIL import Image

SMALL = 32
NAMES = [c.name for c in CLASSES]

# Digests of the releases the generator wrote before the confound options existed (annotation.json
# bytes and each image's decoded pixels, so the PNG encoder's version does not matter).
DEFAULT_RELEASE_DIGEST = "fc53ede0904f322aa80fc6e87a137dd069e86b728783fb6268ef034d01c95094"
TRAIN_RELEASE_DIGEST = "8502cbddc0d654e76635ca93d3c77c4c6006053f340589ad2d8a3fe92a283306"


def release_digest(folder: Path) -> str:
    digest = hashlib.sha256((folder / "annotation.json").read_bytes())
    for path in sorted((folder / "data" / "images").iterdir()):
        with Image.open(path) as image:
            digest.update(path.name.encode() + b"\0" + image.mode.encode() + image.tobytes())
    return digest.hexdigest()


def test_default_release_is_unchanged(tmp_path: Path) -> None:
    assert main(["synth", "--out", str(tmp_path / "bench")]) == 0
    assert release_digest(tmp_path / "bench") == DEFAULT_RELEASE_DIGEST
    argv = ["synth", "--out", str(tmp_path / "train"), "--mode", "train", "--n", "40", "--image-size", "32"]
    assert main(argv) == 0
    assert release_digest(tmp_path / "train") == TRAIN_RELEASE_DIGEST


def test_letter_bias_sets_the_share_of_gold_letters() -> None:
    items = list(generate_items(1200, seed=3, image_size=SMALL, mode="train", letter_bias=("A", 0.9)))
    shares = {letter: n / len(items) for letter, n in Counter(i.answer for i in items).items()}
    assert abs(shares["A"] - 0.9) < 0.03, shares
    for letter in "BCD":  # the rest shared equally: 0.1 / 3 each
        assert abs(shares[letter] - 0.1 / 3) < 0.02, shares
    # The gold option is the class at the answer letter, whatever the letter.
    assert all(i.options[ANSWER_LETTERS.index(i.answer)] == i.class_name for i in items)


@pytest.mark.parametrize("letter, share", [("C", 1.0), ("B", 0.0)])
def test_extreme_letter_shares_are_exact(letter: str, share: float) -> None:
    items = list(generate_items(60, seed=2, image_size=SMALL, letter_bias=(letter, share)))
    answers = Counter(i.answer for i in items)
    assert answers[letter] == (60 if share == 1.0 else 0), answers
    if share == 0.0:
        assert set(answers) == set(ANSWER_LETTERS) - {letter}


def test_letter_bias_changes_only_the_option_order() -> None:
    plain = list(generate_items(30, seed=4, image_size=SMALL, mode="train", cue="random"))
    biased = list(
        generate_items(30, seed=4, image_size=SMALL, mode="train", cue="random", letter_bias=("D", 0.7))
    )
    assert sum(p.answer != b.answer for p, b in zip(plain, biased, strict=True)) > 0
    for p, b in zip(plain, biased, strict=True):
        assert (b.question, b.class_name, b.spurious_types, b.spurious_attributes) == (
            p.question,
            p.class_name,
            p.spurious_types,
            p.spurious_attributes,
        )
        assert sorted(b.options) == sorted(p.options) and b.image.tobytes() == p.image.tobytes()
        assert [o for o in b.options if o != b.class_name] == [o for o in p.options if o != p.class_name]


@pytest.mark.parametrize("mode", ["train", "benchmark"])
def test_text_prior_names_the_class_exactly_on_the_planted_types(mode: str) -> None:
    planted = ("background", "colorization")
    plain = list(generate_items(300, seed=5, image_size=SMALL, mode=mode))
    prior = list(generate_items(300, seed=5, image_size=SMALL, mode=mode, text_prior_types=planted))
    named = 0
    for p, q in zip(plain, prior, strict=True):
        mentioned = {name for name in NAMES if re.search(rf"\b{name}\b", q.question)}
        if set(q.spurious_types) & set(planted):
            named += 1
            assert q.question == TEXT_PRIOR_WORDING.format(question=p.question, class_name=q.class_name)
            assert mentioned == {q.class_name}
        else:
            assert q.question == p.question and mentioned == set()
        assert (q.options, q.answer, q.spurious_attributes) == (p.options, p.answer, p.spurious_attributes)
    assert 0 < named < len(prior)


def test_bad_confound_arguments_raise_before_any_item() -> None:
    cases: list[tuple[dict[str, object], str]] = [
        ({"letter_bias": ("E", 0.9)}, "letter bias 'E'"),
        ({"letter_bias": ("A", 1.5)}, "letter bias share 1.5"),
        ({"letter_bias": ("A", True)}, "letter bias share True"),
        ({"letter_bias": "A:0.9"}, "expected (letter, share)"),
        ({"text_prior_types": ["weather"]}, "text prior types ['weather']"),
        ({"text_prior_types": []}, "expected distinct names"),
        ({"text_prior_types": ["shape", "shape"]}, "expected distinct names"),
    ]
    for kwargs, message in cases:
        with pytest.raises(MMSpuBenchError, match=re.escape(message)):
            generate_items(3, **kwargs)


@pytest.mark.parametrize(
    "text, expected",
    [("A:0.9", ("A", 0.9)), ("b:1", ("B", 1.0)), (" C : 0", ("C", 0.0))],
)
def test_letter_bias_text_is_parsed(text: str, expected: tuple[str, float]) -> None:
    assert parse_letter_bias(text) == expected


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--letter-bias", "A"], "expected LETTER:SHARE"),
        (["--letter-bias", "A:x"], "expected LETTER:SHARE"),
        (["--letter-bias", "A:nan"], "expected LETTER:SHARE"),
        (["--letter-bias", "E:0.5"], "letter bias 'E'"),
        (["--letter-bias", "A:2"], "letter bias share 2.0"),
        (["--text-prior-types", "BG,weather"], "'BG,weather'"),
        (["--text-prior-types", ","], "--text-prior-types"),
    ],
)
def test_cli_bad_confounds_are_one_line_exit_2_and_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["synth", "--out", str(tmp_path / "raw"), "--n", "3", "--image-size", "32", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_cli_confounds_reach_the_generator(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    argv = [
        "synth",
        "--out",
        str(out),
        "--n",
        "20",
        "--image-size",
        "32",
        "--mode",
        "train",
        "--cue",
        "random",
    ]
    assert main([*argv, "--letter-bias", "a:0.8", "--text-prior-types", "BG,Col."]) == 0
    expected = generate_items(
        20,
        image_size=32,
        mode="train",
        cue="random",
        letter_bias=("A", 0.8),
        text_prior_types=("background", "colorization"),
    )
    assert json.loads((out / "annotation.json").read_text()) == [i.record() for i in expected]


def test_written_prior_release_keeps_ids_and_type_order(tmp_path: Path) -> None:
    items = generate_items(9, seed=1, image_size=SMALL, text_prior_types=tuple(reversed(TYPE_NAMES)))
    folder = write_release(tmp_path / "raw", items)
    records = json.loads((folder / "annotation.json").read_text())
    assert [r["id"] for r in records] == [f"{i:06d}" for i in range(9)]
    assert all(r["class_name"] in r["question"] for r in records)  # every type planted
