"""Where a model's files come from: a local folder or a Hub snapshot, safetensors weights only.

Shared by every backend that loads a checkpoint itself (transformers, vLLM offline) and by curate.
"""

from __future__ import annotations

from pathlib import Path

from mmspubench.dataset_builder.hub import has_path_syntax, hub_offline
from mmspubench.errors import MMSpuBenchError, first_line

# Files a model folder needs; weights only as safetensors (pickled .bin weights are not loaded).
_HUB_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.model", "*.tiktoken", "*.txt"]


def check_safe_weights(folder: Path) -> None:
    """Refuse a model folder whose weights are only pickled ``.bin`` files (never unpickled here)."""
    if any(folder.glob("*.safetensors")) or not any(folder.glob("*.bin")):
        return
    raise MMSpuBenchError(
        f"model folder {str(folder)!r}: holds only pickled .bin weights; convert them to safetensors "
        "(transformers: model.save_pretrained(folder, safe_serialization=True))"
    )


def resolve_model(model: str | Path, trust_remote_code: bool = False) -> tuple[Path, str | None]:
    """Local folder of ``model`` and its Hub commit (``None`` for a local folder).

    A Hub id is fetched with ``huggingface_hub`` (or read from its cache when offline).
    """
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise MMSpuBenchError(
                f"model folder {str(path)!r}: has no config.json; expected a saved transformers model"
            )
        check_safe_weights(path)
        return path.resolve(), None
    if path.exists():  # a file (a weights file, a config) is not a model
        raise MMSpuBenchError(
            f"model {str(model)!r}: is a file, not a folder; expected the model's folder (the one holding "
            f"config.json{', e.g. ' + repr(str(path.parent)) if (path.parent / 'config.json').is_file() else ''}) "
            "or a Hub id"
        )
    if isinstance(model, Path) or has_path_syntax(model):
        raise MMSpuBenchError(
            f"model {str(model)!r}: no such folder; expected a local model folder or a Hub id"
        )
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import EntryNotFoundError, HFValidationError

    patterns = [*_HUB_PATTERNS, "*.py"] if trust_remote_code else _HUB_PATTERNS
    offline = hub_offline(datasets=False)
    try:
        folder = Path(snapshot_download(model, allow_patterns=patterns, local_files_only=offline))
    except HFValidationError as err:
        raise MMSpuBenchError(
            f"model {model!r}: not a valid Hub id or existing folder ({first_line(err)})"
        ) from None
    except (OSError, EntryNotFoundError) as err:  # offline, not found, gated, network: all "not available"
        why = (
            "the Hub is offline (HF_HUB_OFFLINE) and it is not in the local cache"
            if offline
            else f"{type(err).__name__}: {first_line(err)}"
        )
        raise MMSpuBenchError(
            f"model {model!r}: not found: no such local folder, and as a Hub id it could not be fetched "
            f"({why}); expected a local model folder or a Hub id of an image-text-to-text model"
        ) from None
    return folder, folder.name if folder.parent.name == "snapshots" else None
