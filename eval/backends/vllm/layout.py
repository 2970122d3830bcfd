"""Weight names vLLM reads for a LLaVA saved by transformers 5.

transformers 5 saves LLaVA's CLIP tower as ``vision_tower.*``; vLLM (0.32) expects the Hub layout
``vision_tower.vision_model.*``. transformers reads both, so renaming the keys of a folder in place
gives one folder that both engines load (same tensors). Used by the tests and the engine bench;
models from the Hub already have the Hub layout.
"""

from __future__ import annotations

import json
from pathlib import Path

_FLAT = "vision_tower."
_HUB = "vision_tower.vision_model."


def _renamed(key: str) -> str:
    return _HUB + key[len(_FLAT) :] if key.startswith(_FLAT) and not key.startswith(_HUB) else key


def to_vllm_layout(folder: Path) -> Path:
    """Rename the CLIP tower's weight keys of every safetensors file in ``folder`` (and the shard
    index) to the Hub layout; a folder already in that layout is left as it is."""
    from safetensors.torch import load_file, save_file

    for path in sorted(folder.glob("*.safetensors")):
        weights = load_file(str(path))
        if any(_renamed(k) != k for k in weights):
            tmp = path.with_name(path.name + ".tmp")
            save_file({_renamed(k): v for k, v in weights.items()}, str(tmp), metadata={"format": "pt"})
            tmp.replace(path)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = json.loads(index.read_text())
        data["weight_map"] = {_renamed(k): v for k, v in data["weight_map"].items()}
        index.write_text(json.dumps(data, indent=2))
    return folder
