"""Card, eval.yaml and push (dry run and a recorded push against a fake Hub API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, DatasetCard
from mmspubench.cli import main
from mmspubench.dataset_builder.builder import build_repo
from mmspubench.dataset_builder.card import compute_statistics, statistics_table
from mmspubench.dataset_builder.push import push
from mmspubench.dataset_builder.raw import read_annotation
from mmspubench.dataset_builder.schema import FEATURES

from tests.dataset_builder.raw_fixtures import make_image, make_record, write_annotation


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five hand-made records: types BG x3, Ori. x2, TN x1, CO x1; sources ObjectNet x3, ImageNet-A x2."""
    root = tmp_path_factory.mktemp("publish")
    plan = [
        (["BG"], "ObjectNet"),
        (["background", "Ori."], "ObjectNet"),
        (["Texture and Noise"], "ImageNet-A"),
        (["BG", "CO"], "ObjectNet"),
        (["orientation"], "ImageNet-A"),
    ]
    records = []
    for i, (types, source) in enumerate(plan):
        record = make_record(i)
        record["spurious_types"], record["source"] = types, source
        records.append(record)
        make_image(root / "raw" / "data" / "images" / f"{i:06d}.png", seed=i)
    write_annotation(root / "raw", records)
    return build_repo(root / "raw", root / "repo")


def _front_matter(card_text: str) -> dict[str, Any]:
    assert card_text.startswith("---\n")
    data: dict[str, Any] = yaml.safe_load(card_text.split("---\n")[1])
    return data


def test_card_yaml_parses_and_declares_the_hub_metadata(built: Path) -> None:
    text = (built / "README.md").read_text(encoding="utf-8")
    meta = _front_matter(text)
    assert meta["pretty_name"] == "MM-SpuBench"
    assert meta["license"] == "other"
    assert "visual-question-answering" in meta["task_categories"]
    assert "MM-SpuBench" in meta["citation"]
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*"}]},
        {"config_name": "inspect", "data_files": [{"split": "test", "path": "inspect/test-*"}]},
    ]
    assert meta["dataset_info"]["splits"][0]["num_examples"] == 5
    assert meta["size_categories"] == ["n<1K"]
    assert [f["name"] for f in meta["dataset_info"]["features"]] == list(FEATURES)
    assert DatasetCard(text).data.to_dict()["pretty_name"] == "MM-SpuBench"
    assert "{{" not in text


def test_card_statistics_match_the_hand_counted_fixture(built: Path) -> None:
    text = (built / "README.md").read_text(encoding="utf-8")
    assert "| Total instances | 5 |" in text
    assert "| Background (BG) | 3 (60.00%) |" in text
    assert "| Orientation (Ori.) | 2 (40.00%) |" in text
    assert "| Texture and Noise (TN) | 1 (20.00%) |" in text
    assert "| Co-occurring Objects (CO) | 1 (20.00%) |" in text
    assert "| Shape (Sha.) | 0 (0.00%) |" in text
    assert "| Source: ObjectNet | 3 (60.00%) |" in text
    assert "| Source: ImageNet-A | 2 (40.00%) |" in text
    assert "Source: synthetic" not in text


def test_statistics_of_empty_input_are_explicit() -> None:
    stats = compute_statistics([])
    assert stats.total == 0 and set(stats.by_type.values()) == {0}
    assert "| Background (BG) | 0 (n/a) |" in statistics_table(stats)


def test_statistics_count_an_item_in_both_of_its_types(tmp_path: Path) -> None:
    records = [make_record(0), make_record(1)]
    records[0]["spurious_types"], records[1]["spurious_types"] = ["BG", "LS"], ["LS"]
    for i in range(2):
        make_image(tmp_path / "data" / "images" / f"{i:06d}.png", seed=i)
    write_annotation(tmp_path, records)
    from mmspubench.dataset_builder.builder import validate_release

    stats = compute_statistics(validate_release(tmp_path))
    assert stats.by_type["lighting_shadows"] == 2 and stats.by_type["background"] == 1
    assert sum(1 for _ in read_annotation(tmp_path)) == stats.total == 2


def test_eval_yaml_declares_the_inspect_task(built: Path) -> None:
    data = yaml.safe_load((built / "eval.yaml").read_text(encoding="utf-8"))
    assert data["name"] == "MM-SpuBench"
    assert data["description"] and data["evaluation_framework"] == "inspect-ai"
    assert [(t["id"], t["config"], t["split"]) for t in data["tasks"]] == [
        ("mcq_accuracy", "inspect", "test"),
        ("blind_accuracy", "inspect", "test"),
    ]
    # the blind task is the same task without the image
    mcq, blind = (t["field_spec"] for t in data["tasks"])
    assert mcq.pop("input_image") == "image" and "input_image" not in blind and mcq == blind


def test_push_dry_run_lists_the_operations(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ops = push(built, "org/MM-SpuBench", revision="v1", dry_run=True)
    assert [(op.kind, op.path_in_repo) for op in ops] == [
        ("create_repo", "org/MM-SpuBench"),
        ("create_branch", "org/MM-SpuBench@v1"),
        ("add", "README.md"),
        ("add", "data/test-00000-of-00001.parquet"),
        ("add", "eval.yaml"),
        ("add", "inspect/test-00000-of-00001.parquet"),
    ]
    sizes = {op.path_in_repo: op.size for op in ops if op.kind == "add"}
    assert sizes["README.md"] == (built / "README.md").stat().st_size
    out = capsys.readouterr().out
    assert "dry run" in out and "add    data/test-00000-of-00001.parquet" in out


def test_push_dry_run_through_the_cli(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["push", "--repo-dir", str(built), "--repo-id", "org/MM-SpuBench", "--dry-run", "--private"])
        == 0
    )
    out = capsys.readouterr().out
    assert "[private]" in out and "add    eval.yaml" in out


def test_push_refuses_a_folder_that_is_not_a_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "README.md").write_text("hello", encoding="utf-8")
    assert main(["push", "--repo-dir", str(tmp_path), "--repo-id", "org/x", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing eval.yaml" in err[0]


class FakeHub:
    """Records the calls a push makes; the remote holds one stale shard."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def create_repo(self, repo_id: str, **kwargs: Any) -> None:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

    def create_branch(self, repo_id: str, **kwargs: Any) -> None:
        self.calls.append(("create_branch", {"repo_id": repo_id, **kwargs}))

    def list_repo_files(self, repo_id: str, **kwargs: Any) -> list[str]:
        return [
            ".gitattributes",
            "README.md",
            "data/test-00000-of-00001.parquet",
            "data/test-00001-of-00002.parquet",
        ]

    def create_commit(self, repo_id: str, operations: Any, **kwargs: Any) -> None:
        self.calls.append(("create_commit", {"repo_id": repo_id, "operations": list(operations), **kwargs}))


def test_push_sends_one_commit_adding_files_and_deleting_stale_shards(built: Path) -> None:
    hub = FakeHub()
    push(built, "org/MM-SpuBench", private=True, api=hub)
    assert hub.calls[0] == (
        "create_repo",
        {"repo_id": "org/MM-SpuBench", "repo_type": "dataset", "private": True, "exist_ok": True},
    )
    kind, commit = hub.calls[1]
    assert kind == "create_commit" and commit["repo_type"] == "dataset" and commit["revision"] is None
    adds = [op.path_in_repo for op in commit["operations"] if isinstance(op, CommitOperationAdd)]
    deletes = [op.path_in_repo for op in commit["operations"] if isinstance(op, CommitOperationDelete)]
    assert adds == [
        "README.md",
        "data/test-00000-of-00001.parquet",
        "eval.yaml",
        "inspect/test-00000-of-00001.parquet",
    ]
    assert deletes == ["data/test-00001-of-00002.parquet"]
    assert json.dumps(adds)  # plain strings, as the Hub API expects
