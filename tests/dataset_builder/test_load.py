"""load_benchmark / dataset_identity on built folders, raw releases (cached build) and Hub ids offline."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from mmspubench.dataset_builder import load
from mmspubench.dataset_builder.builder import build_repo
from mmspubench.dataset_builder.load import cache_root, content_hash, dataset_identity, load_benchmark
from mmspubench.dataset_builder.schema import FEATURES
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder.raw_fixtures import make_release, read_records, write_annotation


def test_built_folder_loads_with_the_schema(tmp_path: Path) -> None:
    repo = build_repo(make_release(tmp_path / "raw", n=3), tmp_path / "repo")
    ds = load_benchmark(repo)
    assert ds.features == FEATURES and ds["id"] == ["000000", "000001", "000002"]
    ident = dataset_identity(repo)
    assert ident["kind"] == "built" and ident["path"] == str(repo.resolve())
    assert ident["content_hash"] == content_hash(repo) and len(ident["content_hash"]) == 64


def test_raw_release_is_built_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "cache"))
    raw = make_release(tmp_path / "raw", n=4)
    ds = load_benchmark(raw)
    assert ds.features == FEATURES and len(ds) == 4
    builds = list((tmp_path / "cache" / "builds").iterdir())
    assert len(builds) == 1
    stamp = (builds[0] / "README.md").stat().st_mtime_ns
    load_benchmark(raw)
    assert (builds[0] / "README.md").stat().st_mtime_ns == stamp  # reused, not rebuilt

    records = read_records(raw)
    records[0]["question"] = "A changed question?"
    write_annotation(raw, records)
    assert load_benchmark(raw)[0]["question"] == "A changed question?"
    assert len(list((tmp_path / "cache" / "builds").iterdir())) == 2
    assert dataset_identity(raw)["content_hash"] == content_hash(raw)


@pytest.mark.parametrize("kind", ["raw", "built"])
def test_load_pinned_equals_load_and_identity_with_one_hash(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "cache"))
    folder = make_release(tmp_path / "raw", n=3)
    if kind == "built":
        folder = build_repo(folder, tmp_path / "repo")
    plain = load_benchmark(folder)
    plain_identity = dataset_identity(folder)
    hashed: list[Path] = []

    def counting_hash(path: Path) -> str:
        hashed.append(path)
        return content_hash(path)

    monkeypatch.setattr(load, "content_hash", counting_hash)
    ds, identity = load.load_pinned(folder)
    assert identity == plain_identity and identity["kind"] == kind
    assert ds.features == plain.features and ds.to_list() == plain.to_list()
    # The data is hashed once; a cached build is hashed too, to check it against its cache record.
    assert hashed[0] == folder.resolve() and hashed.count(folder.resolve()) == 1
    assert all(tmp_path / "cache" / "builds" in p.parents for p in hashed[1:])
    assert len(hashed) == (2 if kind == "raw" else 1)


def test_cache_root_follows_hf_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MMSPUBENCH_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert cache_root() == tmp_path / "hf" / "mmspubench"
    monkeypatch.delenv("HF_HOME")
    assert cache_root() == Path.home() / ".cache" / "huggingface" / "mmspubench"


def test_hub_id_offline_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    # The libraries read the offline variables once, at import; a process started offline sees this.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(MMSpuBenchError, match="Hub dataset not found or not reachable"):
        load_benchmark("mmbench/MM-SpuBench")
    assert dataset_identity("mmbench/MM-SpuBench") == {
        "kind": "hub",
        "id": "mmbench/MM-SpuBench",
        "path": None,
        "revision": None,
        "content_hash": None,
    }


@pytest.mark.parametrize("bad", ["./missing-folder", "not a valid id!", "a/b/c"])
def test_missing_local_path_or_bad_id(bad: str) -> None:
    with pytest.raises(MMSpuBenchError, match="not a dataset folder"):
        load_benchmark(bad)


def test_folder_that_is_neither(tmp_path: Path) -> None:
    with pytest.raises(MMSpuBenchError, match="neither a built dataset folder"):
        load_benchmark(tmp_path)


def test_unknown_split(tmp_path: Path) -> None:
    repo = build_repo(make_release(tmp_path / "raw", n=2), tmp_path / "repo")
    with pytest.raises(MMSpuBenchError, match="cannot load split 'train'"):
        load_benchmark(repo, split="train")


def test_dataset_lacking_a_field_is_refused(tmp_path: Path) -> None:
    repo = build_repo(make_release(tmp_path / "raw", n=2), tmp_path / "repo")
    ds = load_benchmark(repo).remove_columns(["class_name"])
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    ds.to_parquet(str(other / "data" / "test-00000-of-00001.parquet"))
    with pytest.raises(MMSpuBenchError, match="missing required field\\(s\\) class_name"):
        load_benchmark(other)


def test_dataset_with_a_wrong_type_is_refused(tmp_path: Path) -> None:
    repo = build_repo(make_release(tmp_path / "raw", n=2), tmp_path / "repo")
    ds = load_benchmark(repo).cast_column("answer", datasets.Value("int64"))
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    ds.to_parquet(str(other / "data" / "test-00000-of-00001.parquet"))
    with pytest.raises(MMSpuBenchError, match="field 'answer' has type"):
        load_benchmark(other)


def test_folder_rebuilt_in_place_is_not_served_stale(tmp_path: Path) -> None:
    raw = make_release(tmp_path / "raw", n=1)
    repo = tmp_path / "repo"
    answers = []
    for letter in "AB":  # same-sized data: only the answer's class index changes
        records = read_records(raw)
        records[0]["answer"] = letter
        write_annotation(raw, records)
        build_repo(raw, repo, overwrite=True)
        answers.append(FEATURES["answer"].int2str(load_benchmark(repo)[0]["answer"]))
    assert answers == ["A", "B"]
