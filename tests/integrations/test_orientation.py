"""One orientation for every reader: an item stored as a JPEG that its EXIF orientation turns reaches
VLMEvalKit's TSVs and Inspect's samples, published and intervened alike, as the pixels
``mmspubench eval`` shows (datasets' ``Image`` feature applies the orientation), so a pair of files
measures the intervention and nothing else."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.cli import main
from PIL import Image

from tests.dataset_builder.image_fixtures import CF_NAME, SHOWN, turned_release

pd = pytest.importorskip("pandas")

NAMES = f"grayscale,cf:{CF_NAME}"


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The raw release with a turned item, and eval's items of it by id (the cache kept for the module)."""
    from mmspubench.dataset_builder.load import load_benchmark
    from mmspubench.eval.data import load_items

    root = tmp_path_factory.mktemp("turned")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMSPUBENCH_CACHE", str(root / "cache"))
        raw = turned_release(root / "raw")
        items = {i.id: i for i in load_items(load_benchmark(str(raw)), None, "test")}
        yield raw, items


def _plain_decode(data: str) -> Image.Image:
    """What VLMEvalKit and our Inspect provider do with an image: PIL's ``open``, no EXIF applied."""
    return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")


def test_eval_shows_the_turned_item_as_its_exif_orientation_says(turned: tuple[Path, dict[str, Any]]) -> None:
    _, items = turned
    assert items["000000"].pil_image.size == SHOWN
    assert items["000000"].counterfactuals[0].image.size == SHOWN


def test_vlmevalkits_published_and_intervened_tsvs_show_evals_orientation(
    turned: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    raw, items = turned
    out = tmp_path / "MM_SpuBench.tsv"
    argv = ["export", "--format", "vlmevalkit", "--dataset", str(raw), "--out", str(out)]
    assert main([*argv, "--interventions", NAMES]) == 0
    files = [out, tmp_path / "MM_SpuBench_grayscale.tsv", tmp_path / f"MM_SpuBench_cf-{CF_NAME}.tsv"]
    for path in files:
        for row in pd.read_csv(path, sep="\t").to_dict("records"):
            item = items[row["item_id"].removeprefix("item:")]
            assert _plain_decode(row["image"]).size == item.pil_image.size, (path.name, item.id)
    first = pd.read_csv(out, sep="\t").to_dict("records")[0]
    assert np.array_equal(np.asarray(_plain_decode(first["image"])), np.asarray(items["000000"].pil_image))


def _images(task: Any) -> Iterator[tuple[str, Image.Image]]:
    from inspect_ai.model import ContentImage

    for sample in task.dataset:
        (image,) = [p.image for p in sample.input[1].content if isinstance(p, ContentImage)]
        item_id = (sample.metadata or {}).get("item_id", sample.id)
        yield str(item_id), _plain_decode(str(image).partition(",")[2])


@pytest.mark.parametrize("interventions", [None, NAMES])
def test_inspects_published_and_intervened_samples_show_evals_orientation(
    turned: tuple[Path, dict[str, Any]], interventions: str | None
) -> None:
    pytest.importorskip("inspect_ai")
    from mmspubench.integrations.inspect.task import mm_spubench

    raw, items = turned
    shown = list(_images(mm_spubench(dataset=str(raw), interventions=interventions)))
    assert len(shown) == len(items) * (3 if interventions else 1)
    for item_id, image in shown:
        assert image.size == items[item_id].pil_image.size, item_id
    published = next(image for item_id, image in shown if item_id == "000000")
    assert np.array_equal(np.asarray(published), np.asarray(items["000000"].pil_image))
