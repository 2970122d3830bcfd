"""``curate select`` with a tiny random CLIP: ranks against an independent computation, edges, resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from mmspubench.cli import main
from mmspubench.curate import select as select_mod

from .fixtures import select_argv

K, L = 2, 5


def _select(data: Path | str, clip: Path, out: Path, *extra: str) -> int:
    argv = select_argv(
        data, clip, out, "--k", str(K), "--l", str(L), "--batch-size", "5", *extra, source="objectnet"
    )
    return main(argv)


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]


def test_kept_images_equal_the_independent_computation(
    tiny_clip: Path, image_tree: Path, tree_ranks: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "cand"
    assert _select(image_tree, tiny_clip, out) == 0
    kept = {c["image"]: c for c in _lines(out)}
    expected = {path for path, r in tree_ranks.items() if K < r["rank"] <= L}
    assert set(kept) == expected
    # The data covers the four edges, and each falls on the right side.
    by_rank = {r: [p for p, v in tree_ranks.items() if v["rank"] == r] for r in (K, K + 1, L, L + 1)}
    assert all(by_rank.values()), by_rank
    assert not set(by_rank[K]) & set(kept) and not set(by_rank[L + 1]) & set(kept)
    assert set(by_rank[K + 1]) <= set(kept) and set(by_rank[L]) <= set(kept)
    for path, cand in kept.items():
        ref = tree_ranks[path]
        assert cand["true_rank"] == ref["rank"]
        assert [a["class_name"] for a in cand["above"]] == [name for name, _ in ref["above"]]
        for got, (_, prob) in zip(cand["above"], ref["above"], strict=True):
            assert got["prob"] == pytest.approx(prob, abs=1e-4)
        assert cand["class_name"] == path.split("/")[0] and cand["source"] == "ObjectNet"
        assert cand["id"] == f"{sorted(tree_ranks).index(path):06d}"
    selection = json.loads((out / "selection.json").read_text())
    assert selection["seen"] == len(tree_ranks) and selection["kept"] == len(expected)
    hist = {str(r): sum(v["rank"] == r for v in tree_ranks.values()) for r in range(1, 9)}
    assert selection["rank_histogram"] == {r: n for r, n in hist.items() if n}
    assert selection["parameters"]["k"] == K and selection["parameters"]["l"] == L
    assert not list(tmp_path.glob(".*"))


@pytest.mark.parametrize("labels", ["classlabel", "string"])
def test_dataset_source_gives_the_same_ranks(
    labels: str, tiny_clip: Path, image_tree: Path, tree_ranks: dict[str, Any], tmp_path: Path
) -> None:
    paths = sorted(tree_ranks)
    classes = sorted({p.split("/")[0] for p in paths})
    names = [p.split("/")[0] for p in paths]
    label_feature = datasets.ClassLabel(names=classes) if labels == "classlabel" else datasets.Value("string")
    data = datasets.Dataset.from_dict(
        {"image": [str(image_tree / p) for p in paths], "label": names},
        features=datasets.Features({"image": datasets.Image(), "label": label_feature}),
    )
    data.save_to_disk(str(tmp_path / "ds"))
    out = tmp_path / "cand"
    assert _select(tmp_path / "ds", tiny_clip, out) == 0
    got = {c["image"]: c["true_rank"] for c in _lines(out)}
    assert got == {i: tree_ranks[p]["rank"] for i, p in enumerate(paths) if K < tree_ranks[p]["rank"] <= L}


def test_an_interrupted_run_resumes_to_the_same_result(
    tiny_clip: Path, image_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = tmp_path / "clean"
    assert _select(image_tree, tiny_clip, clean) == 0
    real, calls = select_mod.ZeroShotClip.logits, []

    def interrupt_on_fourth(self: Any, images: Any) -> Any:
        calls.append(len(images))
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(self, images)

    monkeypatch.setattr(select_mod.ZeroShotClip, "logits", interrupt_on_fourth)
    out = tmp_path / "cand"
    assert _select(image_tree, tiny_clip, out) == 130
    assert not out.exists()
    state = json.loads((tmp_path / ".cand.selecting" / "state.json").read_text())
    assert state["done"] == 15
    monkeypatch.setattr(select_mod.ZeroShotClip, "logits", real)
    assert _select(image_tree, tiny_clip, out) == 0
    assert (out / "candidates.jsonl").read_bytes() == (clean / "candidates.jsonl").read_bytes()
    resumed = json.loads((out / "selection.json").read_text())
    assert (
        resumed["seen"] == 48
        and resumed["rank_histogram"] == json.loads((clean / "selection.json").read_text())["rank_histogram"]
    )
    assert not (tmp_path / ".cand.selecting").exists()


def test_a_built_synthetic_split_is_a_source(tiny_clip: Path, tmp_path: Path) -> None:
    """The README's worked example: the built synthetic split, labels from its class_name column."""
    assert main(["synth", "--out", str(tmp_path / "raw"), "--n", "12"]) == 0
    assert main(["build", "--source", str(tmp_path / "raw"), "--out", str(tmp_path / "repo")]) == 0
    out = tmp_path / "cand"
    args = ["--split", "test", "--label-column", "class_name"]
    assert _select(tmp_path / "repo", tiny_clip, out, *args) == 0
    selection = json.loads((out / "selection.json").read_text())
    built = datasets.load_dataset(str(tmp_path / "repo"), split="test")
    assert selection["seen"] == 12 and selection["classes"] == len(set(built["class_name"]))
    for cand in _lines(out):
        assert cand["class_name"] == built[cand["image"]]["class_name"] and K < cand["true_rank"] <= L
        assert cand["source"] == "ObjectNet"
