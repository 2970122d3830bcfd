"""The vLLM structured-output path of ``curate annotate`` (slow; needs the separate vLLM environment).

vLLM pins an older transformers, so it lives in its own virtual environment (``.ci/vllm-venv.sh``,
which installs this checkout there); ``MMSPUBENCH_VLLM_PYTHON`` names its python, as for eval's
vLLM tests (:mod:`tests.eval.vllm_support`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.builder import validate_release
from mmspubench.eval.bundled import bundled_model_dir

from tests.eval.vllm_support import vllm_env, vllm_python, vllm_ready_copy

pytestmark = pytest.mark.slow

SCRIPT = """
import sys
from pathlib import Path
from mmspubench.curate.annotate import AnnotateConfig, run_annotate

if __name__ == "__main__":
    cand, model, out = sys.argv[1:4]
    done = run_annotate(Path(cand), AnnotateConfig(backend="vllm", model=model), Path(out))
    print("annotated", done.ok, "of", done.total)
"""


def _vllm_model(folder: Path) -> Path:
    """The bundled tiny LLaVA in the weight layout vLLM reads, with room for the prompt and the answer
    (vLLM's CPU attention has no kernel for the test LLaVA's head size 16)."""
    vllm_ready_copy(bundled_model_dir(), folder)
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["max_position_embeddings"] = 4096  # rotary positions: no learned table
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_vllm_structured_outputs_give_a_draft_that_build_accepts(
    tiny_clip: Path, image_tree: Path, tmp_path: Path
) -> None:
    python = vllm_python()
    select = ["curate", "select", "--data", str(image_tree), "--source-name", "ObjectNet"]
    assert (
        main([*select, "--clip", str(tiny_clip), "--k", "3", "--l", "4", "--out", str(tmp_path / "cand")])
        == 0
    )
    lines = (tmp_path / "cand" / "candidates.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "cand" / "candidates.jsonl").write_text("".join(lines[:3]))
    model = _vllm_model(tmp_path / "model")
    (tmp_path / "run.py").write_text(SCRIPT)
    draft = tmp_path / "draft"
    done = subprocess.run(
        [python, str(tmp_path / "run.py"), str(tmp_path / "cand"), str(model), str(draft)],
        env=vllm_env(), capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "annotated 3 of 3" in done.stdout
    prov = [json.loads(x) for x in (draft / "provenance.jsonl").read_text().splitlines()]
    assert all(p["annotator"]["backend"] == "vllm" and p["status"] == "ok" for p in prov)
    assert prov[0]["annotator"]["engine"]["name"] == "vllm"
    assert len(validate_release(draft)) == 3
    assert main(["build", "--source", str(draft), "--out", str(tmp_path / "repo")]) == 0
