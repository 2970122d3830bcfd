"""The vLLM structured-output path of ``curate annotate`` (slow; needs the separate vLLM venv).

vLLM pins an older transformers, so it lives in its own virtual environment (``.ci/vllm-venv.sh``);
``MMSPUBENCH_VLLM_PYTHON`` names its interpreter. This checkout's packages are put first on its
``PYTHONPATH`` through a folder of links, so the code under test is this checkout's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.builder import validate_release

pytestmark = pytest.mark.slow
VLLM_PYTHON = os.environ.get("MMSPUBENCH_VLLM_PYTHON")
REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from pathlib import Path
from mmspubench.curate.annotate import AnnotateConfig, run_annotate

if __name__ == "__main__":
    cand, model, out = sys.argv[1:4]
    done = run_annotate(Path(cand), AnnotateConfig(backend="vllm", model=model), Path(out))
    print("annotated", done.ok, "of", done.total)
"""


def _package_links(folder: Path) -> Path:
    """``folder/mmspubench/...`` -> this checkout: the package top's entries and the three
    top-level parts (the ``package-dir`` mapping of pyproject.toml)."""
    top = folder / "mmspubench"
    top.mkdir(parents=True)
    for entry in (REPO / "mmspubench").iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for part in ("dataset_builder", "eval", "space"):
        (top / part).symlink_to(REPO / part, target_is_directory=True)
    return folder


def _vllm_model(folder: Path) -> Path:
    """The tiny LLaVA in the weight layout vLLM reads, with room for the prompt and the answer."""
    from mmspubench.eval.bundled import bundled_model_dir
    from safetensors.torch import load_file, save_file

    # The bundled tiny LLaVA: vLLM's CPU attention has no kernel for the test LLaVA's head size 16.
    shutil.copytree(bundled_model_dir(), folder)
    for path in folder.glob("*.safetensors"):
        weights = load_file(str(path))
        renamed = {
            ("vision_tower.vision_model." + k[len("vision_tower.") :])
            if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.")
            else k: v
            for k, v in weights.items()
        }
        save_file(renamed, str(path), metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["max_position_embeddings"] = 4096  # rotary positions: no learned table
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.skipif(
    not VLLM_PYTHON, reason="MMSPUBENCH_VLLM_PYTHON is not set (build the venv: .ci/vllm-venv.sh)"
)
def test_vllm_structured_outputs_give_a_draft_that_build_accepts(
    tiny_clip: Path, image_tree: Path, tmp_path: Path
) -> None:
    select = [
        "curate",
        "select",
        "--data",
        str(image_tree),
        "--source-name",
        "ObjectNet",
        "--clip",
        str(tiny_clip),
    ]
    assert main([*select, "--k", "3", "--l", "4", "--out", str(tmp_path / "cand")]) == 0
    lines = (tmp_path / "cand" / "candidates.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "cand" / "candidates.jsonl").write_text("".join(lines[:3]))
    model = _vllm_model(tmp_path / "model")
    (tmp_path / "run.py").write_text(SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": str(_package_links(tmp_path / "src")),
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "TORCHDYNAMO_DISABLE": "1",
    }
    draft = tmp_path / "draft"
    done = subprocess.run(
        [str(VLLM_PYTHON), str(tmp_path / "run.py"), str(tmp_path / "cand"), str(model), str(draft)],
        env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "annotated 3 of 3" in done.stdout
    prov = [json.loads(x) for x in (draft / "provenance.jsonl").read_text().splitlines()]
    assert all(p["annotator"]["backend"] == "vllm" and p["status"] == "ok" for p in prov)
    assert len(validate_release(draft)) == 3
    assert main(["build", "--source", str(draft), "--out", str(tmp_path / "repo")]) == 0
