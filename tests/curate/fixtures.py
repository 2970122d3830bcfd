"""Offline fixtures of the curation tests: a tiny random CLIP, class-folder image trees, a valid annotation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

CLASSES = ("apple", "bicycle", "candle", "dolphin", "easel", "falcon", "guitar", "hammer")
"""Class names of the generated folders."""
VALID = {
    "reasoning": "the scene suggests other classes",
    "core_attributes": ["typical outline"],
    "spurious_attributes": ["green background", "striped texture"],
    "spurious_types": ["background", "texture_noise"],
    "question": "What is the striped object on the left in front of the green background?",
}
"""One annotation answer that passes every check."""


def build_tiny_clip(folder: Path, seed: int = 11, image_size: int = 32) -> Path:
    """A randomly initialised CLIP (the tiny models' BPE tokenizer, CLIPImageProcessor) saved with save_pretrained."""
    import torch
    from mmspubench.eval.tiny.tokenizer import train_tokenizer
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = train_tokenizer([], words=("a", "photo", "of", *CLASSES), vocab_size=400)
    config = CLIPConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 64,
            "eos_token_id": tokenizer.eos_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": image_size,
            "patch_size": 8,
        },
        projection_dim=16,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(config).eval()
    side = {"height": image_size, "width": image_size}
    images = CLIPImageProcessor(size={"shortest_edge": image_size}, crop_size=side)
    model.save_pretrained(folder)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def make_picture(seed: int, size: int = 40) -> Image.Image:
    """A deterministic random-noise picture with a coloured block (CLIP ranks vary between seeds)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    pixels[: size // 2, : size // 2] = rng.integers(0, 256, size=3, dtype=np.uint8)
    return Image.fromarray(pixels)


def make_class_tree(root: Path, per_class: int, classes: tuple[str, ...] = CLASSES, fmt: str = "png") -> Path:
    """``root/<class>/<i>.png`` with ``per_class`` pictures per class."""
    seed = 0
    for name in classes:
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            make_picture(seed).save(root / name / f"{i:04d}.{fmt}")
            seed += 1
    return root


def independent_ranks(clip_dir: Path, root: Path, template: str = "a photo of a {}.") -> dict[str, Any]:
    """True-class rank of every image by one full ``CLIPModel`` forward per image and numpy."""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(clip_dir).eval()
    processor = CLIPProcessor.from_pretrained(clip_dir)
    classes = sorted(p.name for p in root.iterdir())
    ranks: dict[str, Any] = {}
    for index, name in enumerate(classes):
        for path in sorted((root / name).iterdir()):
            with Image.open(path) as im:
                image = im.convert("RGB")
            inputs = processor(
                text=[template.format(c) for c in classes], images=[image], return_tensors="pt", padding=True
            )
            with torch.no_grad():
                logits = model(**inputs).logits_per_image[0].numpy()
            order = list(np.argsort(-logits, kind="stable"))
            rank = order.index(index) + 1
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            ranks[path.relative_to(root).as_posix()] = {
                "rank": rank,
                "above": [(classes[c], float(probs[c])) for c in order[: rank - 1]],
            }
    return ranks


def select_argv(data: Path | str, clip: Path, out: Path, *extra: str, source: str = "ObjectNet") -> list[str]:
    """The arguments of ``mmspubench curate select`` (``extra`` last: ``--k``, ``--l``, columns...)."""
    return ["curate", "select", "--data", str(data), "--source-name", source, "--clip", str(clip),
            "--out", str(out), *extra]  # fmt: skip


def first_candidates(cand: Path, out: Path, n: int) -> Path:
    """A copy of ``cand`` with only its first ``n`` candidates (a tiny LLaVA writes slowly on a CPU)."""
    out.mkdir()
    (out / "selection.json").write_text((cand / "selection.json").read_text())
    lines = (cand / "candidates.jsonl").read_text().splitlines(keepends=True)
    (out / "candidates.jsonl").write_text("".join(lines[:n]))
    return out


def one_error_line(err: str) -> str:
    """The one error line of a failed command's stderr (progress bars drawn before the failure may
    precede it); fails on a traceback or on more than one error line."""
    err = err.strip()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error" in line.lower()]
    assert len(lines) == 1 and lines[0].startswith("mmspubench curate: error: "), err
    assert err.endswith(lines[0]), err
    return lines[0]
