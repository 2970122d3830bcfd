"""``mmspubench synth`` and the cached default release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder import defaults
from mmspubench.dataset_builder.schema import TYPE_NAMES
from mmspubench.dataset_builder.synth.generate import generate_items


def _records(folder: Path) -> list[dict[str, object]]:
    records: list[dict[str, object]] = json.loads((folder / "annotation.json").read_text(encoding="utf-8"))
    return records


def test_synth_writes_a_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "raw"
    assert main(["synth", "--out", str(out), "--n", "12", "--seed", "3", "--image-size", "40"]) == 0
    records = _records(out)
    assert [r["id"] for r in records] == [f"{i:06d}" for i in range(12)]
    assert sorted(p.name for p in (out / "data" / "images").iterdir()) == [f"{i:06d}.png" for i in range(12)]
    expected = [item.record() for item in generate_items(12, seed=3, image_size=40)]
    assert records == expected
    assert {t for r in records for t in r["spurious_types"]} == set(TYPE_NAMES)  # type: ignore[attr-defined]
    assert "wrote 12 synthetic items" in capsys.readouterr().out


def test_synth_training_options_reach_the_generator(tmp_path: Path) -> None:
    out = tmp_path / "train"
    argv = [
        "synth",
        "--out",
        str(out),
        "--n",
        "30",
        "--image-size",
        "32",
        "--mode",
        "train",
        "--cue",
        "aligned",
    ]
    assert main(argv) == 0
    expected = [item.record() for item in generate_items(30, image_size=32, mode="train", cue="aligned")]
    assert _records(out) == expected
    out2 = tmp_path / "corr"
    assert (
        main(
            [
                "synth",
                "--out",
                str(out2),
                "--n",
                "30",
                "--image-size",
                "32",
                "--mode",
                "train",
                "--correlation",
                "0.25",
            ]
        )
        == 0
    )
    expected = [item.record() for item in generate_items(30, image_size=32, mode="train", correlation=0.25)]
    assert _records(out2) == expected


def test_synth_refuses_an_existing_out_unless_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "raw"
    assert main(["synth", "--out", str(out), "--n", "2", "--image-size", "32"]) == 0
    capsys.readouterr()
    assert main(["synth", "--out", str(out), "--n", "5", "--image-size", "32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "already exists" in err[0]
    assert len(_records(out)) == 2
    assert main(["synth", "--out", str(out), "--n", "5", "--image-size", "32", "--overwrite"]) == 0
    assert len(_records(out)) == 5


@pytest.mark.parametrize(
    "extra",
    [
        ["--correlation", "1.5"],
        ["--correlation", "x"],
        ["--cue", "sideways"],
        ["--mode", "eval"],
        ["--cue", "broken", "--correlation", "0.5"],
    ],
)
def test_synth_rejects_bad_options(tmp_path: Path, extra: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["synth", "--out", str(tmp_path / "raw"), *extra])
    assert exc.value.code == 2
    assert not (tmp_path / "raw").exists()


def test_synth_bad_image_size_is_one_line_and_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["synth", "--out", str(tmp_path / "raw"), "--image-size", "4"]) == 2
    assert "image size 4" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cache_root_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv(defaults.CACHE_ENV, raising=False)
    assert defaults.cache_root() == tmp_path / "hf" / "mmspubench"
    monkeypatch.setenv(defaults.CACHE_ENV, str(tmp_path / "own"))
    assert defaults.cache_root() == tmp_path / "own"
    monkeypatch.delenv(defaults.CACHE_ENV)
    monkeypatch.delenv("HF_HOME")
    assert defaults.cache_root() == Path.home() / ".cache" / "huggingface" / "mmspubench"


def test_default_raw_release_is_generated_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(defaults.CACHE_ENV, str(tmp_path / "cache"))
    raw = defaults.default_raw_release()
    assert raw.parent.name == defaults.default_release_name()
    assert f"v{defaults.GENERATOR_VERSION}" in raw.parent.name
    records = _records(raw)
    assert len(records) == defaults.DEFAULT_N
    assert {t for r in records for t in r["spurious_types"]} == set(TYPE_NAMES)  # type: ignore[attr-defined]
    stamp = (raw / "annotation.json").stat().st_mtime_ns
    assert defaults.default_raw_release() == raw
    assert (raw / "annotation.json").stat().st_mtime_ns == stamp
    assert [p.name for p in raw.parent.iterdir()] == ["raw"]  # no temporary folder left behind


def test_materialise_uses_a_copy_that_appeared_meanwhile(tmp_path: Path) -> None:
    target = tmp_path / "release"

    def racing(out: Path) -> None:
        # Another process finishes first, while this one is still writing its own copy.
        target.mkdir()
        (target / "theirs.txt").write_text("theirs")
        out.mkdir()
        (out / "mine.txt").write_text("mine")

    assert defaults.materialise(target, racing) == target
    assert [p.name for p in target.iterdir()] == ["theirs.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["release"]


def test_materialise_cleans_up_after_a_failure(tmp_path: Path) -> None:
    def failing(out: Path) -> None:
        out.mkdir()
        raise RuntimeError("broken generator")

    with pytest.raises(RuntimeError, match="broken generator"):
        defaults.materialise(tmp_path / "release", failing)
    assert list(tmp_path.iterdir()) == []


def test_default_dataset_dir_loads_with_the_schema(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from datasets import load_dataset
    from mmspubench.dataset_builder.schema import FEATURES

    monkeypatch.setenv(defaults.CACHE_ENV, str(tmp_path / "cache"))
    repo = defaults.default_dataset_dir()
    assert repo == defaults.default_raw_release().parent / "repo"
    assert (repo / "README.md").is_file() and (repo / "eval.yaml").is_file()
    dataset = load_dataset(str(repo), split="test")
    assert dataset.features == FEATURES
    assert len(dataset) == defaults.DEFAULT_N
    raw = _records(defaults.default_raw_release())
    assert dataset[0]["question"] == raw[0]["question"]
    assert defaults.default_dataset_dir() == repo
