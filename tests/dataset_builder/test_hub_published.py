"""The benchmark as it is published on the Hub (imagefolder + order-aligned annotation.json), offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.defaults import cache_root
from mmspubench.dataset_builder.load import load_benchmark, load_pinned
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder import hub_fixtures as hub


@pytest.fixture(autouse=True)
def _own_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hub cache and a build cache per test: the fixtures reuse one commit sha with other content."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "mmspubench-cache"))


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if "examples/s" not in line]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[-1]


def test_records_pair_with_the_image_datasets_yields_at_their_position(tmp_path: Path) -> None:
    import datasets

    snapshot = hub.published(tmp_path)
    # What the public code zips annotation.json with: the imagefolder's images in datasets' order.
    yielded = [hub.read_mark(image) for image in datasets.load_dataset(str(snapshot), split="train")["image"]]
    assert yielded != sorted(yielded), "the fixture must tell datasets' order from the natural order"
    assert yielded == sorted(yielded, key=str)  # datasets yields 1.png, 10.png, 11.png, 12.png, 2.png ...
    ds, identity = load_pinned(hub.REPO_ID)
    assert [hub.read_mark(image) for image in ds["image"]] == yielded
    assert ds["id"] == [f"{i:06d}" for i in range(hub.N_IMAGES)]
    assert ds["question"][4].startswith("Question 4:")
    assert ds[0]["options"] == ["cat", "dog", "car", "cup"]  # "A. cat" read by the key table
    assert identity["kind"] == "hub" and identity["id"] == hub.REPO_ID
    assert identity["revision"] == hub.COMMIT and len(identity["content_hash"]) == 64
    card = next((cache_root() / "hub").rglob("built-*/README.md")).read_text(encoding="utf-8")
    assert "paired with the *i*-th image in the order `datasets` yields" in card


def test_a_local_copy_of_the_published_release_builds_the_same(tmp_path: Path) -> None:
    release = hub.write_release(tmp_path / "copy")
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 0
    ds = load_benchmark(tmp_path / "repo")
    assert [hub.read_mark(image) for image in ds["image"]] == sorted(range(1, 13), key=str)


@pytest.mark.parametrize("n_records", [hub.N_IMAGES - 1, hub.N_IMAGES + 1])
def test_record_and_image_counts_differ_one_line_exit_2_nothing_built(
    tmp_path: Path, n_records: int, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.published(tmp_path, n_records=n_records)
    out = tmp_path / "run"
    assert main(["eval", "--dataset", hub.REPO_ID, "--out", str(out), "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{n_records} records but {hub.N_IMAGES} images" in line and "annotation.json" in line
    assert not out.exists()
    assert not list((cache_root() / "hub").rglob("built-*"))
    release = hub.write_release(tmp_path / f"copy{n_records}", n_records=n_records)
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 2
    assert f"{n_records} records but {hub.N_IMAGES} images" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "repo").exists()


def test_a_revision_not_in_the_local_cache_is_one_line(tmp_path: Path) -> None:
    hub.published(tmp_path)
    with pytest.raises(MMSpuBenchError, match="not in the local Hub cache") as err:
        load_benchmark(hub.REPO_ID, revision="f" * 40)
    assert "\n" not in str(err.value) and "@" + "f" * 40 in str(err.value)
    assert len(load_benchmark(hub.REPO_ID, revision=hub.COMMIT)) == hub.N_IMAGES


def test_unknown_keys_are_named_with_the_way_on_and_the_policy_is_the_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.published(tmp_path, extra={"image_source_url": "http://example.org/x", "notes": ""})
    with pytest.raises(MMSpuBenchError, match="unknown keys of this record: image_source_url, notes") as err:
        load_benchmark(hub.REPO_ID)
    assert "--unknown-keys ignore" in str(err.value)
    assert len(load_benchmark(hub.REPO_ID, unknown_keys="ignore")) == hub.N_IMAGES
    with pytest.raises(MMSpuBenchError, match="unknown key"):  # the lenient build is cached apart
        load_benchmark(hub.REPO_ID)
    out = tmp_path / "run"
    argv = ["eval", "--dataset", hub.REPO_ID, "--limit", "2", "--metrics", "accuracy", "--no-progress"]
    assert main([*argv, "--out", str(out), "--unknown-keys", "ignore"]) == 0
    config = json.loads((out / "results.json").read_text())["config"]
    assert config["unknown_keys"] == "ignore"
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2  # another policy is another run
    assert "unknown key" in _one_line(capsys.readouterr().err)


def test_a_built_repo_on_the_hub_loads_offline_at_its_commit(tmp_path: Path) -> None:
    release = hub.write_release(tmp_path / "copy")
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 0
    hub.put_in_hub_cache(tmp_path / "repo", "org/built", "ab" * 20)
    ds, identity = load_pinned("org/built")
    assert len(ds) == hub.N_IMAGES and identity["revision"] == "ab" * 20
    assert not (cache_root() / "hub" / "org--built").exists()  # read as is, not rebuilt


def test_submit_split_digest_from_the_data_when_the_card_has_none(tmp_path: Path) -> None:
    from mmspubench.dataset_builder.split_digest import split_from_data
    from mmspubench.dataset_builder.split_ids import split_identity
    from mmspubench.eval.submit.checks import published_split

    hub.published(tmp_path)
    expected = split_identity(f"{i:06d}" for i in range(hub.N_IMAGES))
    pair = (expected["split_n"], expected["ids_sha256"])
    assert published_split(hub.REPO_ID, hub.COMMIT) == pair
    built = tmp_path / "repo"
    assert main(["build", "--source", str(hub.write_release(tmp_path / "copy")), "--out", str(built)]) == 0
    shutil.rmtree(built / "inspect")
    hub.put_in_hub_cache(built, "org/built", "cd" * 20)
    assert split_from_data("org/built", "cd" * 20) == pair


def test_curate_data_reads_the_published_raw_release_as_a_labelled_split(tmp_path: Path) -> None:
    from mmspubench.curate.sources import open_source

    hub.published(tmp_path)
    source = open_source(hub.REPO_ID, split="test", label_column="class_name")
    assert len(source.items) == hub.N_IMAGES
    assert set(source.class_names) == set(hub.CLASSES)


def test_a_hub_repo_in_another_parquet_layout_is_read_by_datasets_at_the_commit(tmp_path: Path) -> None:
    release = hub.write_release(tmp_path / "copy")
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 0
    other = tmp_path / "other"
    (other / "test").mkdir(parents=True)
    shutil.copy(next((tmp_path / "repo" / "data").glob("*.parquet")), other / "test" / "part.parquet")
    hub.put_in_hub_cache(other, "org/other", "ef" * 20)
    # offline, datasets cannot list a Hub repo: the line says so, naming the repo
    with pytest.raises(MMSpuBenchError, match="org/other: Hub dataset not found or not reachable"):
        load_benchmark("org/other")


def test_a_republished_repo_with_the_raw_files_left_beside_is_read_as_built(tmp_path: Path) -> None:
    release = hub.write_release(tmp_path / "copy")
    built = tmp_path / "repo"
    assert main(["build", "--source", str(release), "--out", str(built)]) == 0
    shutil.copy(release / "annotation.json", built / "annotation.json")  # push deletes only data/, inspect/
    shutil.copytree(release / "data", built / "data", dirs_exist_ok=True)
    hub.put_in_hub_cache(built, hub.REPO_ID, "ab" * 20)
    ds, identity = load_pinned(hub.REPO_ID, revision="main")
    assert len(ds) == hub.N_IMAGES and identity["revision"] == "ab" * 20
    assert identity["content_hash"] is None  # the Parquet files were read, nothing was rebuilt
    assert not (cache_root() / "hub").exists()


def test_ids_come_from_positions_only_when_no_record_carries_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = hub.write_release(tmp_path / "copy")
    records = json.loads((release / "annotation.json").read_text())
    records[3]["id"] = "item-3"
    (release / "annotation.json").write_text(json.dumps(records))
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "record '#0': field 'id': missing required field; other records carry ids" in line
