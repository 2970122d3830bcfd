"""A raw release whose imagefolder has a ``metadata.jsonl`` pairs records with images as ``datasets``
does: the Hub fetch brings every file the imagefolder reads to order or label the images."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mmspubench.dataset_builder.load import load_pinned
from mmspubench.errors import MMSpuBenchError
from PIL import Image

from tests.dataset_builder import hub_fixtures as hub

# metadata.jsonl rows in an order that is neither the natural nor datasets' lexicographic one.
ORDER = [7, 3, 12, 1, 9, 5, 11, 2, 8, 4, 10, 6]


@pytest.fixture(autouse=True)
def _own_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("MMSPUBENCH_CACHE", str(tmp_path / "mmspubench-cache"))


def _with_metadata(tmp_path: Path, where: str = "metadata.jsonl", prefix: str = "data/") -> Path:
    release = hub.write_release(tmp_path / "published")
    rows = [{"file_name": f"{prefix}{n}.png", "caption": f"image {n}"} for n in ORDER]
    if where.endswith(".csv"):
        text = "file_name,caption\n" + "".join(f"{r['file_name']},{r['caption']}\n" for r in rows)
    else:
        text = "".join(json.dumps(r) + "\n" for r in rows)
    (release / where).write_text(text, encoding="utf-8")
    return release


def _yielded(snapshot: Path) -> list[int]:
    """What the public code zips annotation.json with: the repo's images, in datasets' own order."""
    import datasets

    return [hub.read_mark(image) for image in datasets.load_dataset(str(snapshot), split="train")["image"]]


@pytest.mark.parametrize(
    ("where", "prefix"), [("metadata.jsonl", "data/"), ("data/metadata.jsonl", ""), ("metadata.csv", "data/")]
)
def test_records_pair_with_the_images_in_the_metadata_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, prefix: str
) -> None:
    snapshot = hub.put_in_hub_cache(_with_metadata(tmp_path, where, prefix))
    yielded = _yielded(snapshot)
    assert yielded == ORDER, "datasets orders an imagefolder with metadata by its rows"
    calls = hub.fetch_as_online(monkeypatch, tmp_path / "fetched")
    ds, _ = load_pinned(hub.REPO_ID)
    assert [hub.read_mark(image) for image in ds["image"]] == yielded
    assert any(f"*{Path(where).name}" in patterns for patterns in calls)


def test_images_of_another_extension_are_fetched_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = hub.write_release(tmp_path / "published")
    Image.new("RGB", (16, 16), hub.mark_colour(13)).save(release / "data" / "13.bmp")
    snapshot = hub.put_in_hub_cache(release)
    assert len(_yielded(snapshot)) == hub.N_IMAGES + 1  # datasets reads the .bmp as an image too
    hub.fetch_as_online(monkeypatch, tmp_path / "fetched")
    with pytest.raises(MMSpuBenchError, match=f"{hub.N_IMAGES} records but {hub.N_IMAGES + 1} images"):
        load_pinned(hub.REPO_ID)


def test_without_metadata_the_fetch_pairs_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = hub.published(tmp_path)
    hub.fetch_as_online(monkeypatch, tmp_path / "fetched")
    ds, _ = load_pinned(hub.REPO_ID)
    assert [hub.read_mark(image) for image in ds["image"]] == _yielded(snapshot)
