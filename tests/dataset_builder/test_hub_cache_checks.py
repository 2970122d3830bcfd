"""The cache of a Hub raw release is checked before it is used: edited, truncated or partial-snapshot
copies are made again; odd snapshot files (a link to /dev/zero, a FIFO, a link loop) are one line."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.defaults import cache_root
from mmspubench.dataset_builder.load import load_benchmark, load_pinned
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder import hub_fixtures as hub


@pytest.fixture(autouse=True)
def _own_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "mmspubench-cache"))


@pytest.fixture
def bounded() -> Iterator[None]:
    """Fail (instead of hanging the suite) when a load takes more than 60 seconds."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("the load did not finish: an unbounded copy or a blocking open")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _release() -> Path:
    return next((cache_root() / "hub").rglob("release"))


def _built() -> Path:
    return next((cache_root() / "hub").rglob("built-*"))


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if "examples/s" not in line and "ba/s" not in line]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_an_edited_release_copy_is_made_again_from_the_snapshot(tmp_path: Path) -> None:
    hub.published(tmp_path)
    genuine, identity = load_pinned(hub.REPO_ID)
    records = json.loads((_release() / "annotation.json").read_text())
    records[0]["question"] = "Forged question: which object is shown?"
    (_release() / "annotation.json").write_text(json.dumps(records))
    again, identity_again = load_pinned(hub.REPO_ID)
    assert again["question"] == genuine["question"]
    assert identity_again == identity  # the genuine content hash, not the edited copy's
    assert json.loads((_release() / "annotation.json").read_text())[0]["question"].startswith("Question 0:")


def _rewrite_parquet(path: Path, question: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    questions = table.column("question").to_pylist()
    questions[0] = question
    index = table.schema.get_field_index("question")
    pq.write_table(table.set_column(index, "question", pa.array(questions)), path)


def test_an_edited_built_parquet_is_rebuilt_and_submit_reads_the_genuine_items(tmp_path: Path) -> None:
    from mmspubench.eval.submit.published import published_items

    hub.published(tmp_path)
    genuine = load_benchmark(hub.REPO_ID)
    (shard,) = sorted((_built() / "data").glob("test-*.parquet"))
    _rewrite_parquet(shard, "Forged question")
    assert load_benchmark(hub.REPO_ID)["question"] == genuine["question"]
    _rewrite_parquet(shard, "Forged question")
    items = published_items(hub.REPO_ID, hub.COMMIT)
    assert "Forged question" not in {str(item) for item in items.values()}
    assert len(items) == hub.N_IMAGES


def test_a_truncated_built_parquet_is_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hub.published(tmp_path)
    genuine = load_benchmark(hub.REPO_ID)
    (shard,) = sorted((_built() / "data").glob("test-*.parquet"))
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    capsys.readouterr()
    assert load_benchmark(hub.REPO_ID)["id"] == genuine["id"]
    assert "Failed to read" not in capsys.readouterr().err


def test_a_truncated_parquet_in_a_built_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = hub.write_release(tmp_path / "copy")
    assert main(["build", "--source", str(release), "--out", str(tmp_path / "repo")]) == 0
    (shard,) = sorted((tmp_path / "repo" / "data").glob("test-*.parquet"))
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    capsys.readouterr()
    out = tmp_path / "run"
    argv = ["eval", "--dataset", str(tmp_path / "repo"), "--out", str(out), "--no-progress"]
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert shard.name in line and not out.exists()


def test_a_copy_of_a_partial_snapshot_is_made_again_once_it_is_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = hub.write_release(tmp_path / "published")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "data").mkdir()
    for path in sorted(full.rglob("*")):
        if path.is_file() and path.name not in ("11.png", "12.png"):
            (partial / path.relative_to(full)).write_bytes(path.read_bytes())
    hub.put_in_hub_cache(partial)  # an interrupted download: two images are not there yet
    with pytest.raises(MMSpuBenchError, match="12 records but 10 images"):
        load_benchmark(hub.REPO_ID)
    hub.put_in_hub_cache(full)  # the same commit, now complete
    assert len(load_benchmark(hub.REPO_ID)) == hub.N_IMAGES


@pytest.mark.parametrize("kind", ["zero", "fifo", "loop", "dangling"])
def test_an_odd_snapshot_file_is_one_line(
    tmp_path: Path, kind: str, bounded: None, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = hub.published(tmp_path)
    odd = snapshot / "data" / "13.png"
    if kind == "zero":
        odd.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(tmp_path / "pipe")
        odd.symlink_to(tmp_path / "pipe")
    elif kind == "loop":
        odd.symlink_to(odd)
    else:
        odd.symlink_to(tmp_path / "gone.png")
    out = tmp_path / "run"
    assert main(["eval", "--dataset", hub.REPO_ID, "--out", str(out), "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "13.png" in line and not out.exists()
    assert not list((cache_root() / "hub").rglob("release"))
